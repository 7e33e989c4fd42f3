from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.errors import PolicyViolation
from bot.workspace.branch import MAX_SLUG, branch_name, is_ai_fix_branch, slugify, validate_branch_name


@pytest.mark.parametrize(
    ("number", "title", "expected"),
    [
        (12, "Fix crash on empty input!", "ai-fix/12-fix-crash-on-empty-input"),
        (None, "Add --verbose flag", "ai-fix/local-add-verbose-flag"),
        (3, "--upload-pack=touch /tmp/pwned", "ai-fix/3-upload-pack-touch-tmp-pwned"),
        (4, "Café résumé naïve", "ai-fix/4-cafe-resume-naive"),
        (5, "🔥🔥", "ai-fix/5-task"),
        (6, "", "ai-fix/6-task"),
        (7, "HEAD@{1}..main~2 ^x :y .lock", "ai-fix/7-head-1-main-2-x-y-lock"),
        (8, "refs/heads/main", "ai-fix/8-refs-heads-main"),
    ],
)
def test_branch_names(number: int | None, title: str, expected: str) -> None:
    assert branch_name(number, title) == expected


def test_long_titles_are_cut_at_a_word_boundary() -> None:
    slug = slugify("make the configuration loader tolerate missing optional sections gracefully")
    assert slug == "make-the-configuration-loader-tolerate"
    assert len(slug) <= MAX_SLUG


@pytest.mark.parametrize("number", [0, -1, True, 2.0])
def test_bad_issue_numbers_are_refused(number: object) -> None:
    with pytest.raises(PolicyViolation, match="positive integer"):
        branch_name(number, "x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["main", "-x", "ai-fix/1-a b", "ai-fix/1-a..b", "ai-fix/01-a", "ai-fix/1-", "ai-fix/1-a-", "ai-fix/x-a"]
)
def test_names_ai_fix_did_not_generate_are_refused(name: str) -> None:
    assert not is_ai_fix_branch(name)
    with pytest.raises(PolicyViolation, match="branch_name"):
        validate_branch_name(name)


def _git_accepts(name: str) -> bool:
    done = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, text=True, check=False)
    return done.returncode == 0 and done.stdout.strip() == name


@settings(max_examples=150, deadline=None)
@given(number=st.none() | st.integers(min_value=1, max_value=10**18), title=st.text(max_size=200))
def test_any_title_gives_a_safe_valid_ref(number: int | None, title: str) -> None:
    name = branch_name(number, title)
    assert name.isascii() and name == name.lower()
    assert is_ai_fix_branch(name)
    slug = name.split("-", 2)[-1] if number is not None else name.removeprefix("ai-fix/local-")
    assert 1 <= len(slug) <= MAX_SLUG and not slug.startswith("-") and not slug.endswith("-")
    assert not any(part.startswith("-") for part in name.split("/"))
    assert _git_accepts(name)
