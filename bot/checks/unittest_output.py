"""Per-test results from `python -m unittest -v` output, with ids in pytest's form.

unittest writes no report file, but its verbose mode names every test and its outcome, and each
failure block carries the traceback. Ids are made like pytest's (`tests/test_calc.py::CalcTest::test_add`),
so the evidence speaks of one test the same way whichever runner ran it; a module that cannot be
imported is one result against its file (`tests/test_new.py`), as pytest's collection errors are.
"""

from __future__ import annotations

import re

from bot.checks.models import TestCase
from bot.checks.traceback import frames, relative_paths
from bot.vocabulary import SKIPPED, TestStatus

MESSAGE_CAP = 2000

# "test_add (test_calc.CalcTest.test_add) ... ok"; before Python 3.11 the parentheses hold "test_calc.CalcTest".
_RESULT = re.compile(
    r"^(?P<name>[\w.]+) \((?P<where>[\w.]+)\)(?:\n.*?)??(?: \.\.\. (?P<outcome>ok|FAIL|ERROR|skipped.*|expected failure|"
    r"unexpected success))$",
    re.M,
)
_BLOCK = re.compile(
    r"^={20,}\n(?P<kind>FAIL|ERROR): (?P<name>[\w.]+) \((?P<where>[\w.]+)\)\n(?:[^\n]*\n)?-{20,}\n(?P<body>.*?)(?=^={20,}\n|^-{20,}\nRan |\Z)",
    re.M | re.S,
)
_FAILED_IMPORT = "unittest.loader._FailedTest"
_STATUS: dict[str, TestStatus] = {"ok": "pass", "FAIL": "fail", "ERROR": "error", "unexpected success": "fail"}


def unittest_top(command: str) -> str:
    """The folder module names are relative to: `-t`, else `-s` of `discover`, else the working directory."""
    for flag in ("-t", "--top-level-directory", "-s", "--start-directory"):
        m = re.search(rf"(?:^|\s){re.escape(flag)}(?:\s+|=)(\S+)", command)
        if m:
            folder = m.group(1).strip("'\"").rstrip("/").removeprefix("./")
            return "" if folder in (".", "") else folder
    return ""


def _module_file(module: str, top: str) -> str:
    path = module.replace(".", "/") + ".py"
    return f"{top}/{path}" if top else path


def _identify(name: str, where: str, top: str) -> tuple[str, str]:
    """(test id, file) from a verbose line's name and parenthesised location."""
    if where.startswith(_FAILED_IMPORT):
        file = _module_file(name, top)  # the module that failed to import, named from the top folder
        return file, file
    parts = where.split(".")
    if parts[-1] == name:
        parts = parts[:-1]
    module, cls = ".".join(parts[:-1]), parts[-1]
    file = _module_file(module, top)
    return f"{file}::{cls}::{name}", file


def parse_unittest(output: str, *, command: str, workdir: str = "") -> list[TestCase]:
    """The tests a verbose unittest run reports, each with its status, file, line and failure message."""
    top = unittest_top(command)
    details: dict[tuple[str, str], str] = {}
    for block in _BLOCK.finditer(output):
        details[(block.group("name"), block.group("where"))] = block.group("body").strip()
    cases: list[TestCase] = []
    for m in _RESULT.finditer(output):
        name, where, outcome = m.group("name"), m.group("where"), m.group("outcome")
        test_id, file = _identify(name, where, top)
        status: TestStatus = _STATUS.get(outcome, SKIPPED)
        body = details.get((name, where), "")
        line = next((f.line for f in frames(body, workdir) if f.path == file), None)
        message = relative_paths(_message(body), workdir) if status in ("fail", "error") else ""
        cases.append(TestCase(id=test_id, status=status, file=file, line=line, message=message[:MESSAGE_CAP]))
    return cases


def _message(body: str) -> str:
    """The exception line that ends a traceback (for an import failure: why the module did not import)."""
    lines = [line for line in body.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""
