"""Criterion kinds, decided from the words when the contract is built: the phrasings of `ai-fix init`'s issue form,
of the docs' examples, and of real issues and pull request templates."""

from __future__ import annotations

import pytest
import yaml

from bot.contract.criteria import criterion_kind
from bot.contract.templates import template

B, R, V = "behaviour", "regression", "reviewer"

FORM = next(f for f in yaml.safe_load(template("issue-form.yml"))["body"] if f.get("id") == "acceptance-criteria")

FORM_AND_DOCS = [
    # `ai-fix init`'s issue form (the criteria its placeholder shows) and the docs' examples
    *((line.strip().removeprefix("- "), B) for line in FORM["attributes"]["placeholder"].splitlines()),
    ("`add(2, 3)` returns 5", B),
    ("`total([1, 2, 3])` returns 6", B),
    ('`parse("")` returns `[]`', B),
    ("`total([1, None, 2])` returns 3", B),
    # the sample calculator's issue, and what issue 32 saw real reports say
    ("The existing tests in `tests/test_calc.py` pass", R),
    ("The other tests in `tests/test_recipes.py` keep passing", R),
    ("no regressions", R),
    ("CI stays green", R),
]

REAL_WORLD = [
    # pull request and issue templates, and acceptance criteria of public issues
    ("New and existing unit tests pass locally with my changes", R),
    ("My changes generate no new warnings", R),
    ("`npm run verify` green.", R),
    ("All existing tests pass", R),
    ("Existing tests still pass", R),
    ("No regressions in the existing test suite", R),
    ("Existing behavior is unchanged for callers that don't pass the new flag", R),
    ("Backwards compatible with existing config files", R),
    ("Does not break existing integrations", R),
    ("CI is green", R),
    ("The build passes on all supported Python versions", R),
    ("mypy --strict passes", R),
    ("Lint and type checks pass", R),
    ("The full test suite passes", R),
    ("Markdownlint passed on both modified files", R),
    ("Pre-commit hooks pass", R),
    ("`make test` passes", R),
    ("Other endpoints keep working as before", R),
    ("A test that fails before the fix.", B),
    ("Regression or unit tests are included, or existing tests cover the modified code", B),
    ("Unit tests added for the new parser", B),
    ("Add a regression test for #1234", B),
    ("`to_json(None)` returns `null` instead of raising `TypeError`", B),
    ("The CLI exits with status 2 on an unknown option", B),
    ("Empty input no longer crashes the parser", B),
    ("Verify that no errors appear in the JS console", B),
    ("Timezone-aware datetimes are accepted by `parse_date`", B),
    (
        "If implement: `crediblyGreen` without rationale is rejected at pre-approval/final-approval (test-pinned); "
        "gate comment renders `Rationale:` when accepted.",
        B,
    ),
    ("The existing tests pass and `add(2, 3)` returns 5", B),
    ("Changelog updated", V),
    ("the `CHANGELOG.md` release notes have been updated to reflect significant changes", V),
    ("I have updated the project documentation to reflect my changes.", V),
    ("If adopt: all docs describing rationale-gating corrected; no doc claims the guard exists.", V),
    ("Methods or procedures are documented", V),
    ("Update the README with the new environment variable", V),
    ("Docs: document the `--dry-run` flag", V),
    ("Fix the typo in the installation guide", V),
    ("Rename `get_user` to `fetch_user` across the codebase", V),
    # review requests
    ("Also say in the README that add() sums", V),
    ("src/m.py:1: Reword the docstring.", V),
    ("calc.py:5: Say what add() returns in its docstring.", V),
    ("Two notes on the docs.", V),
    ("src/m.py:3: Also handle negative numbers.", B),
    ("Comments are rendered as markdown", B),
]


@pytest.mark.parametrize(("text", "kind"), FORM_AND_DOCS + REAL_WORLD)
def test_each_phrasing_gets_its_kind(text: str, kind: str) -> None:
    assert criterion_kind(text) == kind


def test_the_table_covers_what_the_issue_asks() -> None:
    assert len(REAL_WORLD) >= 30 and {k for _, k in REAL_WORLD} == {B, R, V}
    assert len(FORM_AND_DOCS) > 8, "the issue form's placeholder criteria are read from the form itself"


def test_a_criterion_that_states_a_result_is_a_behaviour_whatever_else_it_says() -> None:
    """The order errs toward the kind that asks the most: keeping tests green never excuses a missing test."""
    assert criterion_kind("Docs are updated and `parse('')` raises ValueError") == B
    assert criterion_kind("CI stays green; add a regression test for the empty case") == B
