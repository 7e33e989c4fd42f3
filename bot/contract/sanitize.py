"""Remove from issue and comment text what a reader of the rendered page cannot see.

Hidden text is the classic way to smuggle instructions to a model: an HTML comment, zero-width or
bidi characters, Unicode tag characters (invisible ASCII look-alikes), image alt text and link
titles, link reference definitions (`[//]: # (...)`) and elements marked hidden. What remains is
what a human reviewer sees; `<details>` is unwrapped so its content is plain visible text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from bot.markdown import invisible

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HIDDEN_ELEMENT = re.compile(
    r"<(?P<tag>[a-zA-Z][\w-]*)\b[^>]*(?:\shidden\b|display\s*:\s*none|visibility\s*:\s*hidden)[^>]*>.*?(?:</(?P=tag)\s*>|\Z)",
    re.S | re.I,
)
_IMG_TAG = re.compile(r"<img\b[^>]*>", re.I)
_MD_IMAGE = re.compile(r"!\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
_LINK_TITLE = re.compile(r"(\]\(\s*(?:<[^>]*>|[^)\s]*))\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\))\s*\)")
_LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S.*$", re.M)
_DETAILS_TAGS = re.compile(r"</?(?:details|summary)\b[^>]*>", re.I)


def fence_opening(line: str) -> str | None:
    """The fence (e.g. "````") when the line opens a fenced code block, else None."""
    m = _FENCE.match(line)
    return m.group(1) if m else None


def fence_closes(line: str, fence: str) -> bool:
    """Whether the line closes a block opened by `fence`: the same character, at least as many."""
    m = _FENCE.match(line)
    if m is None:
        return False
    return m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end() :].strip()


@dataclass
class Sanitized:
    text: str
    removed: dict[str, int] = field(default_factory=dict)
    """What was removed and how often: "HTML comment", "invisible character", ... (for provenance)."""


def _count_sub(pattern: re.Pattern[str], repl: str, text: str, what: str, removed: dict[str, int]) -> str:
    new, n = pattern.subn(repl, text)
    if n:
        removed[what] = removed.get(what, 0) + n
    return new


def _strip_invisible(text: str, removed: dict[str, int]) -> str:
    kept: list[str] = []
    for ch in text:
        if not invisible(ch):
            kept.append(ch)
        else:
            removed["invisible character"] = removed.get("invisible character", 0) + 1
    return "".join(kept)


def _split_code(text: str, removed: dict[str, int]) -> list[tuple[bool, str]]:
    """Split into (is_fenced_code, text) runs, dropping HTML comments outside code on the way.

    A comment hides everything up to its `-->`, fences included (as GitHub renders it); code
    blocks are shown verbatim, so a `<!--` inside one is visible text and stays.
    """
    runs: list[tuple[bool, list[str]]] = [(False, [])]
    fence: str | None = None
    in_comment = False
    for line in text.split("\n"):
        if in_comment:
            end = line.find("-->")
            if end < 0:
                continue
            in_comment, line = False, line[end + 3 :]
        elif fence is not None:
            runs[-1][1].append(line)
            if fence_closes(line, fence):
                fence = None
                runs.append((False, []))
            continue
        fence = fence_opening(line)
        if fence is not None:
            runs.append((True, [line]))
            continue
        while "<!--" in line:
            removed["HTML comment"] = removed.get("HTML comment", 0) + 1
            head, _, tail = line.partition("<!--")
            close = tail.find("-->")
            if close < 0:
                in_comment, line = True, head
                break
            line = head + tail[close + 3 :]
        runs[-1][1].append(line)
    return [(code, "\n".join(lines)) for code, lines in runs if lines]


def sanitize(text: str | None) -> Sanitized:
    """The visible text of GitHub Markdown, with a count of each kind of hidden content removed."""
    removed: dict[str, int] = {}
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    text = unicodedata.normalize("NFC", _strip_invisible(text, removed))
    parts: list[str] = []
    for code, part in _split_code(text, removed):
        if not code:
            part = _count_sub(_HIDDEN_ELEMENT, "", part, "hidden element", removed)
            part = _count_sub(_IMG_TAG, "[image]", part, "image alt text", removed)
            part = _count_sub(_MD_IMAGE, r"![image](\1)", part, "image alt text", removed)
            part = _count_sub(_LINK_TITLE, r"\1)", part, "link title", removed)
            part = _count_sub(_LINK_DEFINITION, "", part, "link reference definition", removed)
            part = _DETAILS_TAGS.sub("\n", part)
        parts.append(part)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(parts)).strip()
    return Sanitized(text=text, removed=removed)


def describe_removed(removed: dict[str, int]) -> str:
    """A short human line such as "2 HTML comments, 5 invisible characters"."""
    return ", ".join(f"{n} {what}{'s' if n != 1 else ''}" for what, n in sorted(removed.items()))
