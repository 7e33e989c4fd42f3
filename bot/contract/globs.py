"""Path globs for scopes: one dialect, used by the contract's scope rules and by the patch gate.

Semantics (paths are repository-relative and '/'-separated; patterns are anchored at the root):
- `**` as a whole segment matches any number of directories: `a/**/b` matches `a/b` and `a/x/y/b`;
  at the end (`src/**`) it matches everything below `src/`; alone it matches every path.
- `*` matches any characters within one segment (dotfiles included), `?` one character,
  `[abc]` / `[a-z]` / `[!abc]` one character of a class; none of them crosses a `/`.
- `\\` escapes the next character; a trailing `/` means "everything below" (`docs/` = `docs/**`).
- A pattern without `/` is still anchored: `*.py` matches top-level files only, `**/*.py` any depth.
- Case: allow globs match case-sensitively (they never grant more than they say); deny globs match
  case-insensitively, so changing the case of a path (`.GIT/config`, `.GitHub/workflows/x.yml` on a
  case-insensitive checkout) never slips past a deny.

Public functions: `glob_match`, `path_in_scope`, `named_only`, `allowed_by_name`, `normalize_path`,
`glob_within`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

from bot.contract.models import ALWAYS_DENIED, NAMED_ONLY, Scope

# Segment kinds: "**" in the middle (zero or more segments) and at the end (one or more).
_DSTAR_MID = "**/"
_DSTAR_END = "**"
_WILDCARD = re.compile(r"[*?\[\\]")
"""What makes a glob segment match more than one name (escapes included, to err toward refusing)."""


@dataclass(frozen=True)
class _Class:
    ranges: tuple[tuple[str, str], ...]
    negated: bool

    def regex(self) -> str:
        body = "".join(re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in self.ranges)
        # A class never matches '/', negated or not.
        return f"[^/{body}]" if self.negated else f"(?!/)[{body}]"


_Segment = tuple[object, ...] | str
"""A segment: a tuple of tokens (literal characters, STAR, QMARK, _Class) or a '**' kind."""


class _Wild:
    """A wildcard token; distinct from a literal '*' or '?' produced by an escape."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return self.kind


STAR = _Wild("*")
QMARK = _Wild("?")


def _parse_class(seg: str, i: int) -> tuple[_Class | None, int]:
    """Parse `[...]` starting at seg[i] == '['; (None, i) when it is not a closed class."""
    j = i + 1
    negated = j < len(seg) and seg[j] in "!^"
    if negated:
        j += 1
    ranges: list[tuple[str, str]] = []
    first = True
    while j < len(seg):
        c = seg[j]
        if c == "]" and not first:
            return (_Class(tuple(ranges), negated) if ranges else None), j + 1
        first = False
        if c == "\\" and j + 1 < len(seg):
            j += 1
            c = seg[j]
        if j + 2 < len(seg) and seg[j + 1] == "-" and seg[j + 2] != "]":
            hi = seg[j + 2]
            if hi >= c:
                ranges.append((c, hi))
            j += 3
            continue
        ranges.append((c, c))
        j += 1
    return None, i


def _tokens(seg: str) -> tuple[object, ...]:
    out: list[object] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "\\" and i + 1 < len(seg):
            out.append(seg[i + 1])
            i += 2
        elif c == "*":
            if not (out and out[-1] is STAR):  # '**' inside a segment is just '*'
                out.append(STAR)
            i += 1
        elif c == "?":
            out.append(QMARK)
            i += 1
        elif c == "[":
            cls, end = _parse_class(seg, i)
            if cls is None:
                out.append("[")
                i += 1
            else:
                out.append(cls)
                i = end
        else:
            out.append(c)
            i += 1
    return tuple(out)


@lru_cache(maxsize=4096)
def _segments(pattern: str) -> tuple[_Segment, ...]:
    pattern = pattern.strip()
    if pattern.endswith("/"):
        pattern += "**"
    raw: list[str] = []
    for s in pattern.split("/"):
        if s not in ("", ".") and not (s == "**" and raw and raw[-1] == "**"):  # '**/**' is '**'
            raw.append(s)
    return tuple(
        (_DSTAR_END if i == len(raw) - 1 else _DSTAR_MID) if s == "**" else _tokens(s) for i, s in enumerate(raw)
    )


def _token_regex(tok: object) -> str:
    if tok is STAR:
        return "[^/]*"
    if tok is QMARK:
        return "[^/]"
    if isinstance(tok, _Class):
        return tok.regex()
    return re.escape(str(tok))


@lru_cache(maxsize=4096)
def _compile(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    parts: list[str] = []
    segs = _segments(pattern)
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == _DSTAR_MID:
            parts.append("(?:[^/]+/)*")
        elif seg == _DSTAR_END:
            parts.append("[^/]+(?:/[^/]+)*")
        else:
            parts.append("".join(_token_regex(t) for t in seg) + ("" if last else "/"))
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile("".join(parts) if segs else "(?!)", flags)


def normalize_path(path: str) -> str | None:
    """The canonical repository-relative form of a path, or None when it leaves the repository.

    Drops a leading `./`, repeated and trailing slashes; absolute paths and `..` segments give None.
    """
    if not path or path.startswith("/") or "\x00" in path:
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def glob_match(path: str, pattern: str, *, case_sensitive: bool = True) -> bool:
    """Whether a repository-relative path matches a glob (see the module docstring for the dialect)."""
    norm = normalize_path(path)
    return norm is not None and _compile(pattern, case_sensitive).fullmatch(norm) is not None


def path_in_scope(path: str, scope: Scope) -> bool:
    """Whether a change to `path` is allowed: it matches an allow glob and no deny glob.

    The always-denied paths (`.git/**`, `.github/workflows/**`, `.github/ai-fix.yml`) are denied
    even when a scope object lacks them; paths leaving the repository are never in scope.
    """
    norm = normalize_path(path)
    if norm is None:
        return False
    if any(glob_match(norm, g, case_sensitive=False) for g in (*scope.deny, *ALWAYS_DENIED)):
        return False
    if named_only(norm) and not allowed_by_name(norm, scope):
        return False
    return any(glob_match(norm, g) for g in scope.allow)


def named_only(path: str) -> str:
    """What kind of file `path` is when it is changed only if the scope allows it by name (an agent instruction
    file, an ignore file, what the project's CI runs: NAMED_ONLY, matched case-insensitively); "" otherwise."""
    for kind, globs in NAMED_ONLY:
        if any(glob_match(path, g, case_sensitive=False) for g in globs):
            return kind
    return ""


def allowed_by_name(path: str, scope: Scope) -> bool:
    """Whether an allow glob names the file itself (its last part has no wildcard), not only a folder or `**`."""
    return any(glob_match(path, g) and not _WILDCARD.search(g.rsplit("/", 1)[-1]) for g in scope.allow)


def glob_within(inner: str, outer: str) -> bool:
    """Whether every path `inner` matches is also matched by `outer` (case-sensitively).

    Conservative: True is always right; False may be returned for exotic equivalent pairs
    (e.g. character classes that spell out a wildcard), which only ever refuses a narrowing.
    """
    return _segs_within(_segments(inner), _segments(outer))


def _segs_within(inner: tuple[_Segment, ...], outer: tuple[_Segment, ...]) -> bool:
    @cache
    def go(i: int, j: int) -> bool:
        if j == len(outer):
            return i == len(inner)
        if outer[j] == _DSTAR_END:
            return i < len(inner)  # every non-empty remainder of a pattern matches >= 1 segment
        if outer[j] == _DSTAR_MID:
            return go(i, j + 1) or (i < len(inner) and go(i + 1, j))
        if i == len(inner) or isinstance(inner[i], str):
            return False  # outer needs one plain segment; inner has none, or a '**' only '**' covers
        return _seg_within(inner[i], outer[j]) and go(i + 1, j + 1)  # type: ignore[arg-type]

    return go(0, 0)


def _seg_within(inner: tuple[object, ...], outer: tuple[object, ...]) -> bool:
    @cache
    def go(i: int, j: int) -> bool:
        if j == len(outer):
            return i == len(inner)
        if outer[j] is STAR:
            return go(i, j + 1) or (i < len(inner) and go(i + 1, j))
        if i == len(inner):
            return False
        return _char_within(inner[i], outer[j]) and go(i + 1, j + 1)

    return go(0, 0)


def _char_within(inner: object, outer: object) -> bool:
    """Whether the one-character token `inner` only matches characters `outer` matches."""
    if inner is STAR:
        return False
    if outer is QMARK:
        return True
    if inner is QMARK:
        return False
    if isinstance(inner, str):
        if isinstance(outer, str):
            return inner == outer
        return isinstance(outer, _Class) and _class_has(outer, inner)
    assert isinstance(inner, _Class)
    if isinstance(outer, str):
        return not inner.negated and all(lo == hi == outer for lo, hi in inner.ranges)
    if not isinstance(outer, _Class):
        return False
    if not inner.negated and not outer.negated:
        return all(_covered(r, outer.ranges) for r in inner.ranges)
    if not inner.negated and outer.negated:
        return not any(_overlap(a, b) for a in inner.ranges for b in outer.ranges)
    if inner.negated and outer.negated:
        return all(_covered(r, inner.ranges) for r in outer.ranges)
    return False


def _class_has(cls: _Class, ch: str) -> bool:
    inside = any(lo <= ch <= hi for lo, hi in cls.ranges)
    return ch != "/" and inside != cls.negated


def _overlap(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def _covered(r: tuple[str, str], ranges: tuple[tuple[str, str], ...]) -> bool:
    """Whether the character range r lies inside the union of ranges."""
    lo, hi = ord(r[0]), ord(r[1])
    for a, b in sorted((ord(x), ord(y)) for x, y in ranges):
        if a > lo:
            return False  # a gap: later ranges start even further right
        lo = max(lo, b + 1)
        if lo > hi:
            return True
    return False
