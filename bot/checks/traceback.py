"""Reading failure output: stack frames, exception types, and the volatile parts to strip before comparing."""

from __future__ import annotations

import re
from typing import NamedTuple

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

_FRAME_PATTERNS = (
    # CPython: File "/workspace/calc.py", line 3, in add
    re.compile(r'File "(?P<path>[^"\n]+)", line (?P<line>\d+), in (?P<func>[^\s]+)'),
    # pytest: tests/test_calc.py:6: in test_add   /   calc.py:6: ZeroDivisionError
    re.compile(
        r"^(?P<path>[^\s:\"'][^:\n]*\.py):(?P<line>\d+):(?: in (?P<func>\S+)| (?P<exc>[A-Za-z_][\w.]*))?\s*$", re.M
    ),
    # node: at add (/workspace/calc.js:3:11)   /   at /workspace/calc.js:3:11
    re.compile(r"^\s+at (?:(?P<func>[^\s(]+) \()?(?P<path>[^\s()]+\.[cm]?[jt]sx?):(?P<line>\d+):\d+\)?\s*$", re.M),
)

_ERROR_TYPE = re.compile(
    r"^(?:E\s+|\S+\.py:\d+: )?(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning))(?::|$)",
    re.M,
)

_NOT_PROJECT = (
    "site-packages/",
    "dist-packages/",
    "node_modules/",
    ".venv/",
    "venv/",
    "<frozen",
    "<string>",
    "importlib/",
)

_VOLATILE = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"/(?:tmp|var/tmp|private/var/folders|var/folders)/[^\s:'\"),]*"), "<tmp>"),
    (re.compile(r"\bpytest-of-\w+/pytest-\d+\b"), "<tmp>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|µs|us|ns)\b"), "<duration>"),
    (re.compile(r"\b1[5-9]\d{8}(?:\.\d+)?\b"), "<epoch>"),
    (re.compile(r"\b(?:pid|PID|process) \d+\b"), "pid ?"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
)


class Frame(NamedTuple):
    path: str
    """Relative to the workspace when the frame is inside it."""
    line: int
    func: str


def relative(path: str, workdir: str) -> str:
    prefix = workdir.rstrip("/") + "/"
    return path[len(prefix) :] if workdir and path.startswith(prefix) else path


def relative_paths(text: str, workdir: str) -> str:
    """`text` with every `workdir/` prefix removed."""
    return text.replace(workdir.rstrip("/") + "/", "") if workdir else text


def frames(text: str, workdir: str = "") -> list[Frame]:
    """Every stack frame in `text`, in order of appearance."""
    found: list[tuple[int, Frame]] = []
    for pattern in _FRAME_PATTERNS:
        for m in pattern.finditer(text):
            func = m.groupdict().get("func") or ""
            found.append((m.start(), Frame(relative(m.group("path"), workdir), int(m.group("line")), func)))
    return [f for _, f in sorted(found, key=lambda item: item[0])]


def in_project(frame: Frame) -> bool:
    """A frame in the repository's own code (not the standard library, a venv or installed packages)."""
    return not frame.path.startswith("/") and not any(marker in frame.path for marker in _NOT_PROJECT)


def error_types(text: str) -> list[str]:
    """Exception type names in order of appearance, duplicates removed."""
    seen: dict[str, None] = {}
    for m in _ERROR_TYPE.finditer(text):
        seen.setdefault(m.group("type"), None)
    return list(seen)


def normalize(text: str, workdir: str = "") -> str:
    """`text` with the parts that change between identical failures replaced by placeholders."""
    text = relative_paths(ANSI.sub("", text), workdir)
    for pattern, placeholder in _VOLATILE:
        text = pattern.sub(placeholder, text)
    return text
