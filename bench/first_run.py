"""Benchmark of a first run: how long from `ai-fix serve` with no settings to an App registered and webhooks answered.

Each run starts the installed `ai-fix serve` with nothing of ai-fix's set (setup mode) beside the fake GitHub's
manifest flow (tests/support/fake_manifest.py, on loopback), and times:
- start → setup page: from the process's start until `GET /` answers;
- callback → service: the callback's answer, which exchanges the code, writes the settings file and starts the
  service proper in the same process (workers, intake writer);
- then the first signed `ping` answered by it;
- for comparison, what a restart would cost instead: a second `ai-fix serve` started on the settings file the
  page wrote, until `/healthz` answers.
Prints medians of `--runs` repetitions and the load average (the machine is shared).
Usage: .venv/bin/python bench/first_run.py [--runs 5]
       .venv/bin/python bench/first_run.py --smoke          # one run, as CI runs it
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import add_smoke, machine_load

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from tests.support.fake_github import load_payload  # noqa: E402
from tests.support.processes import AI_FIX, free_port  # noqa: E402
from tests.support.server import wait_for_http  # noqa: E402
from tests.support.setup_flow import confirm_on_github, setup_env, setup_service, to_github  # noqa: E402
from tests.support.webhooks import deliver  # noqa: E402

KEY = {"AIFIX_ANTHROPIC_API_KEY": "sk-ant-bench-unused-0123456789"}


def one_run(work: Path) -> dict[str, float]:
    began = time.perf_counter()
    with setup_service(work, **KEY) as svc:
        page_s = time.perf_counter() - began
        back = confirm_on_github(*to_github(svc.client))
        began = time.perf_counter()
        assert svc.client.get(back).status_code == 200
        switch_s = time.perf_counter() - began
        began = time.perf_counter()
        ping = deliver(svc.client, "ping", load_payload("ping/event"), secret=svc.github.webhook_secret)
        ping_ms = (time.perf_counter() - began) * 1000
        assert ping.status_code == 200
        restart_s = restart(work, svc.github_url, svc.settings_file)
    return {"page_s": page_s, "switch_s": switch_s, "ping_ms": ping_ms, "restart_s": restart_s}


def restart(work: Path, github_url: str, settings_file: Path) -> float:
    """A second service on the written settings file (what a restart would take), until /healthz answers."""
    env = setup_env(github_url, AIFIX_ENV_FILE=str(settings_file), **KEY)
    env["AIFIX_DATABASE_URL"] = f"sqlite:///{work / 'restart.db'}"
    port = free_port()
    log = work / "restart.log"
    began = time.perf_counter()
    with log.open("wb") as out:
        process = subprocess.Popen([AI_FIX, "serve", "--port", str(port)], env=env, cwd=work, stdout=out, stderr=out)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", process, log, timeout=120)
        return time.perf_counter() - began
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    add_smoke(parser, "one run")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    print(f"before: {machine_load()}")
    results = []
    for n in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ai-fix-first-run-") as work:
            results.append(one_run(Path(work)))
        print(f"run {n + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in results[-1].items()), flush=True)
    medians = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(
        f"medians of {args.runs}: start → setup page {medians['page_s']:.2f} s; callback → service answering "
        f"{medians['switch_s']:.2f} s; first signed ping {medians['ping_ms']:.1f} ms; a restart instead "
        f"{medians['restart_s']:.2f} s ({medians['restart_s'] / medians['switch_s']:.1f} × the in-process switch)"
    )
    print(f"after: {machine_load()}")


if __name__ == "__main__":
    main()
