"""Benchmark of the run viewer: what a page and a live update cost as a trace grows.

Builds traces of N steps by repeating the recorded demo session's steps (each with a checkpoint
diff of about 40 lines added to every third step), written through the real `Trace` writer, then
times, as the server does them:
- the whole page: read and redact every line, build the view, render the template;
- one live update: the view rebuilt and every section re-rendered after one more step.
The secrets redacted are what a service holds (a 1.7 KB PEM key and three tokens), since redaction
dominates the read. Prints medians of `--runs` repetitions.
Usage: .venv/bin/python bench/viewer.py [--steps 30 100 300] [--runs 9]   (--smoke: 5 steps, 2 runs)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from common import add_smoke, held_secrets, machine_load, median_ms

from bot.commands.demo import demo_data
from bot.viewer.pages import Pages
from bot.viewer.routes import FileSource, read_records
from bot.viewer.stream import Follow
from bot.viewer.view import build_view

DIFF = "".join(f"-    old line {i}\n+    new line {i}\n" for i in range(20))


def make_trace(path: Path, steps: int) -> None:
    records = [json.loads(line) for line in demo_data("session.jsonl").splitlines()]
    head = [r for r in records if r["kind"] in ("start", "baseline")]
    body = [r for r in records if r["kind"] == "step"]
    lines = [json.dumps(r) for r in head]
    for n in range(steps):
        step = dict(body[n % len(body)], step=n + 1)
        if n % 3 == 2 and step["actions"]:
            action = dict(
                step["actions"][0], checkpoint={"sha": f"{n:040x}", "diff": f"diff --git a/f b/f\n@@ -1 +1 @@\n{DIFF}"}
            )
            step["actions"] = [action, *step["actions"][1:]]
        lines.append(json.dumps(step))
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, nargs="+", default=[30, 100, 300])
    parser.add_argument("--runs", type=int, default=9)
    add_smoke(parser, "5 steps, 2 runs")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.runs = [5], 2
    pages, held = Pages(), held_secrets()
    template = pages.env.get_template("run.html")
    print(f"{machine_load()}; medians of {args.runs} runs")
    print(f"{'steps':>6} {'trace KB':>9} {'page ms':>8} {'page KB':>8} {'update ms':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for steps in args.steps:
            path = Path(tmp) / f"trace-{steps}.jsonl"
            make_trace(path, steps)
            meta = {"facts": [("trace", str(path))]}

            def page(path: Path = path, meta: dict = meta) -> str:
                view = build_view(read_records(path, held))
                return template.render(view=view, meta=meta, events_url="events?from=0", nonce="x")

            follow = Follow(FileSource(path), pages, held)
            follow.read()

            def one_step_behind(follow: Follow = follow) -> None:
                follow.seen(len(follow.records) - 1)

            html = page()
            update = median_ms(follow.update, args.runs, before=one_step_behind)
            print(
                f"{steps:>6} {path.stat().st_size / 1024:>9.0f} {median_ms(page, args.runs):>8.1f} "
                f"{len(html) / 1024:>8.0f} {update:>10.1f}"
            )
    print(f"at the end: {machine_load()}")


if __name__ == "__main__":
    main()
