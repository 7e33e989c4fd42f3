"""Benchmark of redaction: what one call costs on the texts it runs on most, with the secrets a service holds.

Redaction runs on every trace line, every check output and every outgoing text, so its cost per call
matters. The secrets are what a service holds (a 1.7 KB PEM key and three 40-character tokens, as in
`bench/viewer.py`); the texts:
- a trace line: the recorded demo session's step records joined into one line (~10 KB of JSON);
- a check's output: 64 KiB of pytest-like lines (the sandbox's default output cap);
- an outgoing text: a PR body of ~4 KB of Markdown.
`warm` is the median of `--runs` calls with the same secrets (what a job pays per text), `first` the
median cost of the first call with a new set of secrets (what a job pays once: the patterns are built
then). Compare with another checkout by running it there: `PYTHONPATH=/path/to/checkout python bench/redact.py`.
Usage: .venv/bin/python bench/redact.py [--runs 30]   (--smoke: 3 runs, as CI runs it)
"""

from __future__ import annotations

import argparse

from common import add_smoke, held_secrets, machine_load, median_ms

import bot.redact
from bot.commands.demo import demo_data
from bot.redact import redact


def texts() -> dict[str, str]:
    trace = "".join(line for line in demo_data("session.jsonl").splitlines() if '"kind":"step"' in line)
    lines = [f"tests/test_mod_{i % 40}.py::test_case_{i} PASSED  [{i % 100:3d}%]" for i in range(1400)]
    output = "\n".join(lines)[: 64 * 1024]
    body = "\n".join(
        f"- `src/pkg/module_{i}.py`: changed `handler_{i}()` so the request id is kept (+3 -1 lines)" for i in range(50)
    )
    return {"trace line": trace, "check output": output, "PR body": body}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    add_smoke(parser, "3 runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 3
    print(f"{bot.redact.__file__}; {machine_load()}; medians of {args.runs} runs")
    print(f"{'text':>13} {'KB':>5} {'warm ms':>8} {'first ms':>9}")
    held = held_secrets()
    for name, text in texts().items():
        warm = median_ms(lambda text=text: redact(text, held), args.runs)
        first = median_ms(lambda text=text: redact(text, held_secrets()), max(3, args.runs // 5))
        print(f"{name:>13} {len(text) / 1024:>5.1f} {warm:>8.2f} {first:>9.1f}")
    print(f"at the end: {machine_load()}")


if __name__ == "__main__":
    main()
