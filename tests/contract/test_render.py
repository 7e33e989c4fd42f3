"""The two issue comments and the files `ai-fix init` writes."""

from __future__ import annotations

import yaml

from bot.contract.config import parse_config
from bot.contract.models import Budget, Check, Criterion, Provenance, Scope, TaskContract
from bot.contract.render import (
    render_clarification_comment,
    render_config_error_comment,
    render_config_file,
    render_contract_comment,
    render_issue_form,
)
from bot.contract.sanitize import sanitize
from bot.contract.sections import parse_sections


def contract(**kw: object) -> TaskContract:
    values: dict[str, object] = {
        "status": "ready",
        "goal": "Empty files parse; ping @octocat",
        "acceptance_criteria": [Criterion(text="`parse('')` is `[]`", origin="stated"),
                                Criterion(text="The checks pass: tests.", origin="derived")],
        "scope": Scope(allow=["src/**"], deny=[".git/**"]),
        "checks": [Check(name="tests", run="pytest -q | tee log", origin="config")],
        "budget": Budget(max_steps=12),
        "provenance": Provenance(snapshot_at="2026-01-02T03:04:05+00:00", ignored=["issue: scope `docs/**` is outside"],
                                 untrusted=[{"author": "m", "permission": "read", "excerpt": "> hi"}]),
    }  # fmt: skip
    values.update(kw)
    return TaskContract.model_validate(values)


def test_contract_comment_says_what_will_be_done() -> None:
    body = render_contract_comment(contract())
    assert body.startswith("#### ai-fix: what I am going to do\n")
    assert "> Empty files parse; ping `@octocat`" in body  # echoed mentions notify nobody
    assert "- [ ] `parse('')` is `[]` _(stated · behaviour)_" in body and "_regression_: by the checks" in body
    assert "| tests | `pytest -q \\| tee log` | 600 s | config |" in body
    assert "may change `src/**`; never `.git/**`" in body
    assert "12 steps" in body
    assert "scope `docs/**` is outside" in body
    assert "1 comment by people without write access" in body and "> hi" not in body


def test_clarification_comment_says_exactly_what_is_needed_with_an_example() -> None:
    c = contract(status="needs_clarification", missing=["acceptance criteria or reproducible evidence: ..."])
    body = render_clarification_comment(c)
    assert body.startswith("#### ai-fix needs more before it starts\n")
    assert "- acceptance criteria or reproducible evidence: ..." in body
    example = body.split("````markdown\n", 1)[1].split("````", 1)[0]
    sections = parse_sections(example)  # the example itself is a valid, ready request
    assert sections.acceptance_criteria and sections.goal and sections.scope_allow and sections.checks
    assert "Checks available by name: `tests`." in body


def test_comments_survive_our_own_sanitiser_unchanged_in_meaning() -> None:
    """What we post contains nothing a reader cannot see."""
    body = render_contract_comment(contract())
    assert sanitize(body).removed == {}


def test_config_error_comment_quotes_the_error() -> None:
    body = render_config_error_comment(".github/ai-fix.yml line 3: budget.max_step: unknown key")
    assert body.startswith("#### ai-fix cannot read `.github/ai-fix.yml`") and "line 3: budget.max_step" in body


def test_generated_config_parses_and_keeps_the_detected_checks() -> None:
    checks = [Check(name="pytest", run="python -m pytest -q", origin="detected"),
              Check(name="npm-test", run='npm test -- --grep "a: b"', timeout=300, origin="detected")]  # fmt: skip
    config = parse_config(render_config_file(checks))
    assert [(c.name, c.run, c.timeout) for c in config.checks] == [
        ("pytest", "python -m pytest -q", 600), ("npm-test", 'npm test -- --grep "a: b"', 300)]  # fmt: skip
    assert config.sandbox.network == "none" and config.budget.max_steps == 30


def test_generated_config_without_checks_leaves_detection_on() -> None:
    config = parse_config(render_config_file([]))
    assert "checks" not in config.model_fields_set


def test_issue_form_has_the_contract_sections() -> None:
    form = yaml.safe_load(render_issue_form())
    labels = [item["attributes"]["label"] for item in form["body"] if item["type"] == "textarea"]
    assert labels == ["Goal", "Non-goals", "Constraints", "Acceptance criteria", "Scope", "Checks"]
    rendered = "\n\n".join(f"### {label}\n\n_No response_" for label in labels)  # how GitHub renders an empty form
    assert parse_sections(rendered).found == [
        "goal",
        "non_goals",
        "constraints",
        "acceptance_criteria",
        "scope",
        "checks",
    ]
