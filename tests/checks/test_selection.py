"""Narrowing a check to the tests in given files, and reading unittest's verbose results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.checks.selection import runner, runs_tests, selected_command
from bot.checks.unittest_output import parse_unittest
from bot.contract.models import Check

FILES = ["tests/test_calc.py", "tests/sub/test_b.py"]


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("python -m pytest -q", "python -m pytest -q tests/test_calc.py tests/sub/test_b.py"),
        ("env X=1 /venv/bin/python -m pytest -q tests", "env X=1 /venv/bin/python -m pytest -q tests/test_calc.py tests/sub/test_b.py"),
        ("pytest -k 'not slow' -x tests/", "pytest -k 'not slow' -x tests/test_calc.py tests/sub/test_b.py"),
        ("pytest --maxfail=2 src", "pytest --maxfail=2 tests/test_calc.py tests/sub/test_b.py"),
        ("pytest --frobnicate yes tests", None),  # an unknown option might take the next word: not rewritten
        ("pytest tests && echo done", None),
        ("make test", None),
    ],
)  # fmt: skip
def test_pytest_commands_keep_their_interpreter_and_options(run: str, expected: str | None) -> None:
    assert selected_command(Check(name="t", run=run), FILES) == expected


def test_unittest_runs_one_discovery_per_file_from_the_same_top_folder() -> None:
    check = Check(name="t", run="python3 -m unittest discover -s tests -t . -v")
    assert runner(check) == "unittest"
    assert selected_command(check, FILES) == (
        "python3 -m unittest discover -v -s tests -t . -p test_calc.py; "
        "python3 -m unittest discover -v -s tests/sub -t . -p test_b.py"
    )


def test_a_declared_run_tests_command_gets_the_files() -> None:
    check = Check(name="unit", run="npx vitest run", run_tests="npx vitest run {tests}")
    assert runner(check) == "declared" and selected_command(check, ["a b.test.ts"]) == "npx vitest run 'a b.test.ts'"


def test_linters_are_not_test_checks() -> None:
    assert not runs_tests(Check(name="ruff", run="ruff check ."))
    assert not runs_tests(Check(name="mypy", run="python -m mypy ."))
    assert runs_tests(Check(name="go-test", run="go test ./..."))
    assert runs_tests(Check(name="npm-test", run="npm test"))


def test_unittest_verbose_output_gives_pytest_like_ids_statuses_and_messages(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "tests" / "test_calc.py").write_text(
        "import unittest\nfrom calc import add\n\n\nclass CalcTest(unittest.TestCase):\n"
        "    def test_add(self):\n        '''Adds.'''\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_ok(self):\n        print('chatter')\n\n"
        "    @unittest.skip('later')\n    def test_skip(self):\n        pass\n\n"
        "    @unittest.expectedFailure\n    def test_xf(self):\n        self.assertEqual(1, 2)\n"
    )
    (tmp_path / "tests" / "test_new.py").write_text("from calc import mul\n")
    command = f"{sys.executable} -m unittest discover -s tests -v"
    done = subprocess.run(command.split(), cwd=tmp_path, capture_output=True, text=True, check=False)
    cases = {c.id: c for c in parse_unittest(done.stderr, command=command, workdir=str(tmp_path))}
    assert cases["tests/test_calc.py::CalcTest::test_add"].status == "fail"
    assert cases["tests/test_calc.py::CalcTest::test_add"].message == "AssertionError: -1 != 5"
    assert cases["tests/test_calc.py::CalcTest::test_add"].line == 8
    assert cases["tests/test_calc.py::CalcTest::test_ok"].status == "pass"
    assert cases["tests/test_calc.py::CalcTest::test_skip"].status == "skipped"
    assert cases["tests/test_calc.py::CalcTest::test_xf"].status == "skipped"
    new = cases["tests/test_new.py"]
    assert new.status == "error" and "cannot import name 'mul'" in new.message and str(tmp_path) not in new.message
