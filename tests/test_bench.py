"""CI runs every benchmark on a tiny input (`scripts/bench-smoke.sh`), so a bench that no longer runs fails CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "scripts" / "bench-smoke.sh"

TAKES_SMOKE = """import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--smoke", action="store_true")
print("smoke" if parser.parse_args().smoke else "full run")

if __name__ == "__main__":
    pass
"""
NO_SMOKE = """import argparse
argparse.ArgumentParser().parse_args()

if __name__ == "__main__":
    pass
"""
SHARED = "raise SystemExit('a module the benches share is never run')\n"


def smoke_run(tmp_path: Path, scripts: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """scripts/bench-smoke.sh in a copy of the layout it expects: bench/ with `scripts`, .venv/bin/python."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(SMOKE, tmp_path / "scripts" / SMOKE.name)
    (tmp_path / "bench").mkdir()
    for name, text in scripts.items():
        (tmp_path / "bench" / name).write_text(text)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    os.symlink(sys.executable, tmp_path / ".venv" / "bin" / "python")
    return subprocess.run(
        ["bash", str(tmp_path / "scripts" / SMOKE.name)], capture_output=True, text=True, check=False, timeout=60
    )


def test_the_smoke_run_fails_on_a_bench_without_a_smoke_mode(tmp_path: Path) -> None:
    done = smoke_run(tmp_path, {"good.py": TAKES_SMOKE, "stale.py": NO_SMOKE, "common.py": SHARED})
    assert done.returncode == 1
    assert "bench/stale.py --smoke failed" in done.stderr
    assert "unrecognized arguments: --smoke" in done.stdout
    assert "bench/good.py --smoke ok" in done.stdout


def test_the_smoke_run_passes_when_every_bench_takes_smoke_and_skips_shared_modules(tmp_path: Path) -> None:
    done = smoke_run(tmp_path, {"good.py": TAKES_SMOKE, "common.py": SHARED})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bench/good.py --smoke ok" in done.stdout
    assert "common.py" not in done.stdout


def test_ci_runs_the_smoke_run_and_every_bench_script_declares_its_smoke_mode() -> None:
    assert re.search(r"^\./scripts/bench-smoke\.sh\b", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)
    benches = [p for p in sorted((ROOT / "bench").glob("*.py")) if 'if __name__ == "__main__":' in p.read_text()]
    assert len(benches) >= 10
    for bench in benches:
        assert "add_smoke(" in bench.read_text(), f"{bench.name} has no --smoke (bench/common.py: add_smoke)"
