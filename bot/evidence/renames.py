"""Tests a diff renames without weakening them (pure): the `def` line changes, the body stays or only grows.

flask's own fix renamed `test_config_from_file` to `test_config_from_file_json` with the same body: that test is
not gone, it runs under its new name. A rename whose body lost a line is a change to the test, and the
weakened-test rule still applies to it.
"""

from __future__ import annotations

import re

_FILE = re.compile(r"^\+\+\+ b/(.+?)\t?$")
_DEF = re.compile(r"^(?P<indent>\s*)(?:async\s+)?def\s+(?P<name>test\w*)\s*\(")


def renamed_tests(diff: str) -> dict[tuple[str, str], str]:
    """(file, old test function name) → its new name, for each test whose rename keeps every line of its body."""
    found: dict[tuple[str, str], str] = {}
    path = ""
    hunk: list[str] = []
    for line in [*diff.splitlines(), "@@"]:
        if line.startswith("@@") or line.startswith("diff --git"):
            found.update({(path, old): new for old, new in _renames(hunk)})
            hunk = []
        elif m := _FILE.match(line):
            path = m.group(1)
        elif line[:1] in (" ", "+", "-") and not line.startswith(("+++", "---")):
            hunk.append(line)
    return found


def _renames(hunk: list[str]) -> list[tuple[str, str]]:
    """Each removed `def test_…` whose change block (the run of `-`/`+` lines it is in) adds another name."""
    pairs = []
    for i, line in enumerate(hunk):
        old = _DEF.match(line[1:]) if line[0] == "-" else None
        if old is None:
            continue
        block = []
        for later in hunk[i + 1 :]:
            if later[0] == " ":
                break
            block.append(later)
        new = next((m for later in block if later[0] == "+" and (m := _DEF.match(later[1:]))), None)
        if new and new.group("name") != old.group("name") and _body_kept(hunk, i, len(old.group("indent"))):
            pairs.append((old.group("name"), new.group("name")))
    return pairs


def _body_kept(hunk: list[str], start: int, indent: int) -> bool:
    """No line of the old function's body (the old side's lines below its `def`, deeper indented) is removed."""
    for line in hunk[start + 1 :]:
        if line[0] == "+":
            continue
        text = line[1:]
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            return True  # the next definition: the body ended
        if line[0] == "-":
            return False
    return True
