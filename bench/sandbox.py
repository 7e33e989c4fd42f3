"""Per-command overhead of the sandbox backends against a bare subprocess of the same command.

    .venv/bin/python bench/sandbox.py [--runs 30] [--command true]   (--smoke: 3 runs, as CI runs it)

Prints the median wall time per command for: a bare subprocess, the `none` backend, bwrap, a warm
podman container (the job's container already up: what every check after the first pays), a plain
`podman exec` per command (what the warm path avoids), and a cold container (run + exec + remove).
Goal: the default backend's per-check overhead once the job's container is up stays under 20 ms.
The podman image is the test image (built locally on first use, see tests/support_sandbox).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import common

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from bot.sandbox.engine import engine_command, engine_env  # noqa: E402
from tests.support.sandbox import open_test_sandbox, skip_reason  # noqa: E402

median_ms = partial(common.median_ms, warm_up=True)
"""Each timing after one untimed call (page cache, first-use costs)."""

GOAL_MS = 20.0


def exec_median_ms(backend: str, workspace: Path, command: str, runs: int) -> float:
    """Median per-command time in one sandbox of `backend`, opened once for all runs."""
    sandbox = open_test_sandbox(backend, workspace)
    try:
        return median_ms(lambda: sandbox.exec(command, timeout=30), runs)
    finally:
        sandbox.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--command", default="true")
    common.add_smoke(parser, "3 runs of each")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 3
    print(common.machine_load())
    with tempfile.TemporaryDirectory(prefix="ai-fix-bench-") as workspace:
        rows = measure(args.command, args.runs, Path(workspace))
    report(args.command, args.runs, rows)
    print(f"at the end: {common.machine_load()}")
    return 0


def measure(command: str, runs: int, workspace: Path) -> list[tuple[str, float]]:
    rows: list[tuple[str, float]] = []

    rows.append(("bare subprocess (sh -c)", median_ms(lambda: subprocess.run(["sh", "-c", command], check=True), runs)))

    rows.append(("none backend", exec_median_ms("none", workspace, command, runs)))

    if reason := skip_reason("bwrap"):
        print(f"bwrap skipped: {reason}")
    else:
        rows.append(("bwrap (one bwrap per command)", exec_median_ms("bwrap", workspace, command, runs)))

    if reason := skip_reason("podman"):
        print(f"podman skipped: {reason}")
    else:
        warm = open_test_sandbox("podman", workspace)
        rows.append(("podman warm (job container up)", median_ms(lambda: warm.exec(command, timeout=30), runs)))
        container = warm.container  # type: ignore[attr-defined]
        plain = [*engine_command("podman"), "exec", container, "sh", "-c", command]
        rows.append(
            (
                "podman exec per command",
                median_ms(lambda: subprocess.run(plain, env=engine_env("podman"), check=True), max(runs // 3, 3)),
            )
        )
        warm.close()

        def cold() -> None:
            box = open_test_sandbox("podman", workspace)
            box.exec(command, timeout=30)
            box.close()

        rows.append(("podman cold (run + exec + rm)", median_ms(cold, max(runs // 6, 1))))

    return rows


def report(command: str, runs: int, rows: list[tuple[str, float]]) -> None:
    bare = rows[0][1]
    print(f"command: {command!r}, runs: {runs}")
    print(f"{'backend':34} {'median ms':>10} {'overhead ms':>12} {'ratio':>8}")
    for name, ms in rows:
        print(f"{name:34} {ms:10.1f} {ms - bare:12.1f} {ms / bare:8.1f}x")
    warm_row = next((ms for name, ms in rows if name.startswith("podman warm")), None)
    if warm_row is not None:
        verdict = "meets" if warm_row - bare < GOAL_MS else "misses"
        print(f"default backend (podman, warm) overhead {warm_row - bare:.1f} ms: {verdict} the {GOAL_MS:.0f} ms goal")


if __name__ == "__main__":
    sys.exit(main())
