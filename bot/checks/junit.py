"""Per-test results from a junit XML report (pytest's `--junitxml`, family xunit1)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from bot.checks.models import TestCase
from bot.checks.traceback import relative
from bot.vocabulary import SKIPPED, TestStatus

MESSAGE_CAP = 2000


def parse_junit(xml: bytes, *, workdir: str = "") -> list[TestCase]:
    """The test cases in a report; an unreadable report gives no cases (the exit code still decides)."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        return []
    cases: list[TestCase] = []
    for case in root.iter("testcase"):
        file = relative(case.get("file") or "", workdir) or None
        line = case.get("line")
        cases.append(
            TestCase(
                id=_test_id(case.get("classname") or "", case.get("name") or "", file),
                status=_status(case),
                file=file,
                line=int(line) + 1 if line and line.isdigit() else None,  # junit lines are 0-based
                message=_message(case),
            )
        )
    return cases


_OUTCOMES: tuple[tuple[str, TestStatus], ...] = (("failure", "fail"), ("error", "error"), (SKIPPED, SKIPPED))


def _status(case: ET.Element) -> TestStatus:
    for tag, status in _OUTCOMES:
        if case.find(tag) is not None:
            return status
    return "pass"


def _message(case: ET.Element) -> str:
    for tag in ("failure", "error"):
        node = case.find(tag)
        if node is not None:
            text = (node.text or "").strip() or node.get("message", "")
            return text[:MESSAGE_CAP]
    skipped = case.find(SKIPPED)
    return (skipped.get("message", "") if skipped is not None else "")[:MESSAGE_CAP]


def _test_id(classname: str, name: str, file: str | None) -> str:
    """pytest's node id: "tests/test_calc.py::TestCalc::test_add" from file, class path and name."""
    if not file:
        return f"{classname}::{name}" if classname else name
    module = file[:-3].replace("/", ".") if file.endswith(".py") else ""
    if not classname and name == module:
        return file  # a collection error is reported against the module itself
    rest = classname[len(module) :].lstrip(".") if module and classname.startswith(module) else ""
    parts = [file, *(p for p in rest.split(".") if p), name]
    return "::".join(parts)
