"""Glob dialect and scope rules: a table of cases plus properties checked against a reference matcher."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bot.contract.globs import glob_match, glob_within, normalize_path, path_in_scope
from bot.contract.models import ALWAYS_DENIED, Scope
from bot.contract.narrow import base_scope, narrow_scope

MATCH_TABLE = [
    # (path, pattern, matches)
    ("src/a.py", "src/**", True),
    ("src/x/y/z.py", "src/**", True),
    ("src", "src/**", False),
    ("srcx/a.py", "src/**", False),
    ("a.py", "*.py", True),
    ("d/a.py", "*.py", False),  # anchored: no implicit any-depth
    ("d/e/a.py", "**/*.py", True),
    ("a.py", "**/*.py", True),
    ("a/b", "a/**/b", True),
    ("a/x/y/b", "a/**/b", True),
    ("a/xb", "a/**/b", False),
    (".env", "*", True),  # dotfiles are not special
    ("any/path/at/all", "**", True),
    ("docs/guide/x.md", "docs/", True),  # trailing slash: everything below
    ("a[1]", r"a\[1]", True),
    ("a1", "a[0-9]", True),
    ("ab", "a[!0-9]", True),
    ("a5", "a[!0-9]", False),
    ("ab", "a?", True),
    ("a/b", "a?b", False),  # '?' never crosses '/'
    ("./src/a.py", "src/*.py", True),  # paths are normalised
    ("src//a.py", "src/*.py", True),
    ("../src/a.py", "**", False),  # leaving the repository never matches
    ("/etc/passwd", "**", False),
    ("SRC/a.py", "src/**", False),  # case-sensitive by default
]


@pytest.mark.parametrize(("path", "pattern", "expected"), MATCH_TABLE)
def test_glob_match_table(path: str, pattern: str, expected: bool) -> None:
    assert glob_match(path, pattern) is expected


def test_case_insensitive_matching_is_explicit() -> None:
    assert not glob_match(".GIT/config", ".git/**")
    assert glob_match(".GIT/config", ".git/**", case_sensitive=False)


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".GIT/hooks/pre-commit",
        ".github/workflows/ci.yml",
        ".GitHub/Workflows/x.yml",
        ".github/ai-fix.yml",
        "./.github/AI-FIX.yml",
    ],
)
def test_always_denied_even_when_the_scope_forgets_them(path: str) -> None:
    assert not path_in_scope(path, Scope(allow=["**"], deny=[]))


def test_scope_deny_beats_allow_and_allow_is_required() -> None:
    scope = Scope(allow=["src/**", "tests/**"], deny=["src/vendor/**"])
    assert path_in_scope("src/app.py", scope)
    assert path_in_scope("tests/test_app.py", scope)
    assert not path_in_scope("src/vendor/lib.py", scope)
    assert not path_in_scope("SRC/VENDOR/lib.py", Scope(allow=["**"], deny=["src/vendor/**"]))
    assert not path_in_scope("README.md", scope)


@pytest.mark.parametrize(
    ("inner", "outer", "expected"),
    [
        ("src/foo/**", "src/**", True),
        ("src/**", "src/foo/**", False),
        ("**/*.py", "**", True),
        ("a/*.py", "a/*", True),
        ("a/[ab]", "a/?", True),
        ("a/?", "a/[ab]", False),
        ("src/*.py", "src/**", True),
        ("src/**", "src/*.py", False),
        ("docs/", "docs/**", True),
        ("src", "src/**", False),  # 'src/**' needs something below src
        ("**", "src/**", False),
        ("tests/test_[a-c].py", "tests/test_[a-z].py", True),
        ("tests/test_[a-z].py", "tests/test_[a-c].py", False),
    ],
)
def test_glob_within_table(inner: str, outer: str, expected: bool) -> None:
    assert glob_within(inner, outer) is expected


def test_normalize_path() -> None:
    assert normalize_path("./a//b/") == "a/b"
    assert normalize_path("a/../b") is None
    assert normalize_path("") is None


# --- properties -------------------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "ab", "a.py", "b.py", ".x"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=4).map("/".join)
_SEGMENT_PATTERNS = st.sampled_from(["a", "b", "*", "?", "a*", "*.py", "[ab]", "[!a]*", "**", "a?", "?.py"])
_PATTERNS = st.lists(_SEGMENT_PATTERNS, min_size=1, max_size=4).map("/".join)


def _reference(path: list[str], pattern: list[str]) -> bool:
    """An independent matcher: fnmatch within a segment, explicit recursion for '**'."""
    if not pattern:
        return not path
    if pattern[0] == "**":
        if len(pattern) == 1:
            return len(path) >= 1
        return _reference(path, pattern[1:]) or (bool(path) and _reference(path[1:], pattern))
    return bool(path) and fnmatchcase(path[0], pattern[0]) and _reference(path[1:], pattern[1:])


@settings(max_examples=400, deadline=None)
@given(_PATHS, _PATTERNS)
def test_glob_match_agrees_with_reference(path: str, pattern: str) -> None:
    assert glob_match(path, pattern) == _reference(path.split("/"), pattern.split("/"))


@st.composite
def _pattern_and_member(draw: st.DrawFn) -> tuple[str, str]:
    """A pattern and a path drawn so that the pattern matches it."""
    pattern = draw(_PATTERNS)
    segs: list[str] = []
    for seg in pattern.split("/"):
        if seg == "**":
            segs += draw(st.lists(_NAMES, min_size=0, max_size=2))
            continue
        out = ""
        for ch in seg.replace("[!a]", "!").replace("[ab]", "C"):
            out += {"*": draw(st.sampled_from(["", "a", "b.py"])), "?": draw(st.sampled_from("ab.")),
                    "!": draw(st.sampled_from("b.x")), "C": draw(st.sampled_from("ab"))}.get(ch, ch)  # fmt: skip
        segs.append(out)
    if pattern.split("/")[-1] == "**" and not segs[len(segs) - 1 :]:
        segs.append("a")
    return pattern, "/".join(s for s in segs)


def _generalise(pattern: str, which: list[int], by: str) -> str:
    segs = pattern.split("/")
    return "/".join(by if i in which else s for i, s in enumerate(segs))


@settings(max_examples=600, deadline=None)
@given(
    _pattern_and_member(),
    _PATTERNS,
    st.lists(st.integers(0, 3), max_size=2),
    st.sampled_from(["*", "**", "?*"]),
    st.booleans(),
)
def test_glob_within_is_sound(
    inner_and_path: tuple[str, str], other: str, which: list[int], by: str, related: bool
) -> None:
    """Whenever glob_within says inner ⊆ outer, a path inner matches is matched by outer.

    Half the outers are the inner pattern with segments generalised, so `within` is often true."""
    inner, path = inner_and_path
    assume(normalize_path(path) is not None and glob_match(path, inner))  # '*' may draw an empty segment
    outer = _generalise(inner, which, by) if related else other
    if glob_within(inner, outer):
        assert glob_match(path, outer), (inner, outer, path)


@settings(max_examples=200, deadline=None)
@given(_PATTERNS)
def test_glob_within_is_reflexive_and_everything_is_within_doublestar(pattern: str) -> None:
    assert glob_within(pattern, pattern)
    assert glob_within(pattern, "**")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_PATTERNS, min_size=1, max_size=3),
    st.lists(_PATTERNS, max_size=2),
    st.lists(_PATTERNS, max_size=3),
    st.lists(_PATTERNS, max_size=2),
    _PATHS,
)
def test_narrowing_never_widens(
    config_allow: list[str], config_deny: list[str], issue_allow: list[str], issue_deny: list[str], path: str
) -> None:
    config = base_scope(config_allow, config_deny)
    narrowed, notes = narrow_scope(config, issue_allow, issue_deny, "issue")
    if path_in_scope(path, narrowed):
        assert path_in_scope(path, config)
    assert set(ALWAYS_DENIED) <= set(narrowed.deny)
    assert set(config.deny) <= set(narrowed.deny)
    assert len(notes) <= len(issue_allow)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_PATTERNS, min_size=1, max_size=3),
    st.sampled_from(ALWAYS_DENIED),
    st.sampled_from(["config", "hooks/x", "ci.yml"]),
)
def test_always_denied_paths_stay_denied_after_any_narrowing(allow: list[str], denied: str, leaf: str) -> None:
    scope, _ = narrow_scope(base_scope(["**"], []), allow, [], "issue")
    path = denied.replace("**", leaf)
    assert not path_in_scope(path, scope)
    assert not path_in_scope(path.upper(), scope)
