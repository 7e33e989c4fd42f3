"""`.github/ai-fix.yml`: a good file parses; a broken one fails with the key and the line."""

from __future__ import annotations

import pytest

from bot.contract.config import parse_config
from bot.errors import ConfigError

GOOD = """\
checks:                       # run by the harness, never by the model
  - name: tests
    run: python -m pytest -q
    timeout: 600
setup: ["pip install -e ."]
scope: {allow: ["src/**", "tests/**"], deny: ["migrations/**"]}
budget: {max_steps: 30, max_cost_usd: 3.0, max_files_changed: 10, max_lines_changed: 400}
sandbox: {image: "python:3.12-slim", network: none, pids: 256, memory_mb: 1024, cpus: 2}
model: {name: "claude-sonnet-4-5", small: "claude-haiku-4-5"}
"""


def test_the_issue_example_parses() -> None:
    config = parse_config(GOOD)
    assert [(c.name, c.run, c.timeout) for c in config.checks] == [("tests", "python -m pytest -q", 600)]
    assert config.setup == ["pip install -e ."]
    assert config.scope.allow == ["src/**", "tests/**"] and config.scope.deny == ["migrations/**"]
    assert config.budget.max_steps == 30 and config.budget.max_wall_minutes == 30  # absent key: documented default
    assert (config.sandbox.pids, config.sandbox.memory_mb, config.sandbox.cpus) == (256, 1024, 2.0)
    assert config.model.small == "claude-haiku-4-5"
    assert config.model_fields_set == {"checks", "setup", "scope", "budget", "sandbox", "model"}


def test_empty_file_is_all_defaults_and_sets_no_keys() -> None:
    config = parse_config("# nothing yet\n")
    assert config.model_fields_set == set()
    assert config.scope.allow == ["**"]


BROKEN = [
    (
        "checks:\n  - name: tests\n    run: pytest\n    timeout: ten\n",
        "line 4: checks[0].timeout: must be an integer (got 'ten')",
    ),
    (
        "checks:\n  - name: tests\n    command: pytest\n",
        "line 3: checks[0].command: unknown key; allowed here: name, run, timeout",
    ),
    ("checks:\n  - name: tests\n    command: pytest\n", "line 2: checks[0].run: required key is missing"),
    (
        "budget:\n  max_steps: 30\n  max_cost: 3\n",
        "line 3: budget.max_cost: unknown key; allowed here: max_steps, max_cost_usd",
    ),
    ("budget: {max_steps: -1}\n", "line 1: budget.max_steps: must be a positive number (got -1)"),
    ("budget: {max_steps: true}\n", "line 1: budget.max_steps: must be an integer (got True)"),
    (
        "sandbox:\n  image: x\n  network: off\n",
        "line 3: sandbox.network: must be one of 'none' or 'setup' (got False) (YAML reads",
    ),
    ("sandbox: {pids: 0}\n", "line 1: sandbox.pids: must be a positive number (got 0)"),
    ("setup: pip install .\n", "line 1: setup: must be a list (got 'pip install .')"),
    ("scope:\n  allow: src/**\n", "line 2: scope.allow: must be a list (got 'src/**')"),
    (
        "checks: []\nextra: 1\n",
        "line 2: extra: unknown key; allowed here: checks, setup, setup_secrets, scope, budget, sandbox, model, approval, approval_timeout_days, ci",
    ),
    ("budget: {max_steps: 1}\nbudget: {max_steps: 2}\n", "line 2: budget: duplicate key; keep only one"),
    (
        "checks:\n  - {name: a, run: x}\n  - {name: a, run: y}\n",
        "line 2: checks: check names must be unique; repeated: a",
    ),
    ("checks: [\n  name: a\n", "line 3: not valid YAML"),
    ("- just\n- a list\n", "line 1: the file must be a mapping with the keys checks, setup"),
    ("model: {name: 5}\n", "line 1: model.name: must be a string (got 5)"),
    ("ci: {max_rounds: -1}\n", "line 1: ci.max_rounds: must be 0 or more (0: no CI rounds, re-runs only)"),
    ("ci: {rerun: false}\n", "line 1: ci.rerun: unknown key; allowed here: fix, rerun_first, max_rounds"),
]


def test_the_ci_keys_default_to_fixing_with_a_rerun_first_and_three_rounds() -> None:
    assert parse_config("checks: []\n").ci.model_dump() == {"fix": True, "rerun_first": True, "max_rounds": 3}
    assert parse_config("ci: {fix: false}\n").ci.fix is False


@pytest.mark.parametrize(("text", "expected"), BROKEN)
def test_broken_config_names_key_and_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text)
    assert f".github/ai-fix.yml {expected}" in str(err.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config("budget:\n  max_steps: x\nsandbox:\n  netwrk: none\n")
    lines = str(err.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(".github/ai-fix.yml line 2: budget.max_steps")
    assert lines[1].startswith(".github/ai-fix.yml line 4: sandbox.netwrk: unknown key")


def test_approval_keys() -> None:
    config = parse_config("approval: plan\napproval_timeout_days: 0.5\n")
    assert (config.approval, config.approval_timeout_days) == ("plan", 0.5)
    assert (parse_config("").approval, parse_config("").approval_timeout_days) == ("none", 7.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("approval: always\n", "line 1: approval: must be one of 'none' or 'plan' (got 'always')"),
        ("approval: no\n", "line 1: approval: must be one of 'none' or 'plan' (got False) (YAML reads"),
        ("approval_timeout_days: 0\n", "line 1: approval_timeout_days: Input should be greater than 0 (got 0)"),
        ("approval_timeout_days: a week\n", "line 1: approval_timeout_days: must be a number (got 'a week')"),
    ],
)
def test_broken_approval_keys(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text)
    assert f".github/ai-fix.yml {expected}" in str(err.value)
