"""What an issue, a failure or a diff names directly: paths, traceback frames, symbols (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_EXT = r"(?:py|pyi|js|mjs|cjs|jsx|ts|tsx|go|rs|java|c|h|cc|cpp|rb|php|cs|kt|swift|scala|toml|cfg|ini|yml|yaml|json)"
_PATH = re.compile(rf"(?<![\w/.-])((?:[\w.-]+[/\\])*[\w.-]+\.{_EXT})\b")
_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>]+))?')
_GENERIC_FRAME = re.compile(rf"((?:[\w.-]*[/\\])*[\w.-]+\.{_EXT}):(\d+)")
_JAVA_FRAME = re.compile(r"at ([\w$.]+)\.([\w$<>]+)\(([\w$]+\.java):(\d+)\)")
_DIFF_FILE = re.compile(r"^\+\+\+ b/(\S+)", re.MULTILINE)
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")
_WORD = re.compile(r"(?<![0-9])[A-Za-z_][A-Za-z0-9_]*")
_NUMBERED_MODULE = re.compile(r"(?<!\w)\d+_\w*[A-Za-z]\w*")
"""Module names that start with digits, like migrations (`0011_update_proxy_permissions`)."""
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_TRACEBACK_HEADER = re.compile(r"Traceback \(most recent call last\):")
_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)|(?:^(?: {4}|\t|>>> |In \[\d+\]: ).*\n?)+", re.DOTALL | re.MULTILINE)

CODE_LIKE = 1.0
"""Weight of a name that is code by its shape or place (CamelCase, snake_case, in backticks or a code block)."""
PROSE = 0.35
"""Weight of a plain word that happens to be a defined name too (`sinc`, `limit`)."""


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str = ""
    depth: int = 0
    """Position in the traceback; higher is closer to where the error was raised."""


@dataclass
class Mentions:
    paths: list[str] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    names: dict[str, float] = field(default_factory=dict)
    """Identifier -> how surely it is meant as code."""
    dotted: list[str] = field(default_factory=list)
    """`a.b.c` module or attribute paths, for resolution against module names."""
    diff_paths: list[str] = field(default_factory=list)
    words: str = ""
    """The inputs without paths and frame headers: what lexical search should read."""


def _looks_like_code(word: str) -> bool:
    return "_" in word.strip("_") or (any(c.isupper() for c in word[1:]) and any(c.islower() for c in word))


def _frames(text: str) -> list[Frame]:
    frames: list[Frame] = []
    seen_spans: list[tuple[int, int]] = []
    for m in _PY_FRAME.finditer(text):
        frames.append(Frame(m.group(1).replace("\\", "/"), int(m.group(2)), m.group(3) or ""))
        seen_spans.append(m.span())
    for m in _JAVA_FRAME.finditer(text):
        package_path = m.group(1).rsplit(".", 1)[0].replace(".", "/")
        frames.append(Frame(f"{package_path}/{m.group(3)}", int(m.group(4)), m.group(2)))
        seen_spans.append(m.span())
    for m in _GENERIC_FRAME.finditer(text):
        if not any(start <= m.start() < end for start, end in seen_spans):
            frames.append(Frame(m.group(1).replace("\\", "/"), int(m.group(2))))
    # Python prints the innermost call last; keep that order as depth.
    return [Frame(f.path, f.line, f.function, depth) for depth, f in enumerate(frames)]


def find_mentions(text: str, failure: str = "", diff: str = "") -> Mentions:
    """Everything in the inputs that names code directly."""
    everything = f"{text}\n{failure}"
    mentions = Mentions()
    mentions.frames = _frames(everything)
    mentions.paths = list(dict.fromkeys(p.replace("\\", "/") for p in _PATH.findall(everything)))
    mentions.diff_paths = list(dict.fromkeys(_DIFF_FILE.findall(diff)))
    # Words inside paths and frame headers (`site-packages`, `line`, `last`) are not names of code.
    everything = _TRACEBACK_HEADER.sub(" ", everything)
    for pattern in (_PY_FRAME, _JAVA_FRAME, _GENERIC_FRAME, _PATH):
        everything = pattern.sub(" ", everything)
    failure = _PATH.sub(" ", _GENERIC_FRAME.sub(" ", _PY_FRAME.sub(" ", failure)))
    mentions.dotted = list(dict.fromkeys(_DOTTED.findall(everything)))
    mentions.words = f"{everything}\n{diff}"
    code = "\n".join(
        [m.group(0) for m in _CODE_BLOCK.finditer(everything)]
        + _BACKTICKED.findall(everything)
        + _CALLED.findall(everything)
        + [f.function for f in mentions.frames]
        + mentions.dotted
        + [failure]
    )
    names: dict[str, float] = {}
    for word in _WORD.findall(everything):
        names[word] = max(names.get(word, 0.0), CODE_LIKE if _looks_like_code(word) else PROSE)
    for word in _WORD.findall(code) + _NUMBERED_MODULE.findall(everything):
        names[word] = CODE_LIKE
    mentions.names = names
    return mentions
