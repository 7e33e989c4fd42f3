"""Small repositories whose real pytest runs feed the check-runner tests."""

from __future__ import annotations

import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

SECRET = "s3cr3t-value-0123456789"

CALC = """\
def add(a, b):
    return a - b


def div(a, b):
    return a / b
"""

TEST_CALC = f"""\
import time

from calc import add, div


def test_add():
    assert add(2, 3) == 5


class TestDiv:
    def test_div(self):
        assert div(4, 2) == 2

    def test_zero(self):
        obj = object()
        print("object at", hex(id(obj)), "at", time.time())
        assert div(1, 0) == 0


def test_ok():
    assert True


def test_token():
    token = "{SECRET}"
    assert token == "expected", f"got {{token}}\\n" + "\\n".join(["same line"] * 30)
"""

FLAKY = """\
import os


def test_flaky():
    # Fails the first time it runs in this workspace, passes after.
    first = not os.path.exists("ran-once")
    open("ran-once", "w").close()
    assert not first
"""


def write_repo(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def calc_repo(root: Path) -> Path:
    return write_repo(root, {"calc.py": CALC, "tests/__init__.py": "", "tests/test_calc.py": TEST_CALC})


@dataclass
class PytestRun:
    root: Path
    exit_code: int
    output: str
    junit: bytes


def run_pytest(root: Path, *args: str) -> PytestRun:
    """pytest for real, on the host, the way the runner asks for it inside a sandbox."""
    report = root.parent / f"{root.name}-junit-{uuid.uuid4().hex[:8]}.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            "-o",
            "junit_family=xunit1",
            *args,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        check=False,
    )
    return PytestRun(root, done.returncode, done.stdout + done.stderr, report.read_bytes() if report.exists() else b"")
