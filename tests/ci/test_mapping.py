"""A failing CI command maps to the contract checks that run the same tool."""

from __future__ import annotations

import pytest

from bot.ci.mapping import mapped_checks, tools
from bot.contract.models import Check

CHECKS = [
    Check(name="tests", run="env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 /opt/py/bin/python -m pytest -q tests"),
    Check(name="lint", run="ruff check ."),
    Check(name="js", run="npm run test"),
]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest", ["tests"]),
        ("uv run pytest -x", ["tests"]),
        ("python3 -m pytest tests/unit", ["tests"]),
        ("coverage run -m pytest", ["tests"]),
        ("pip install -e . && ruff check src && pytest", ["tests", "lint"]),
        ("npm test", ["js"]),
        ("go test ./...", []),
        ("./scripts/ci.sh", []),
    ],
)
def test_commands_map_to_the_checks_running_the_same_tool(command: str, expected: list[str]) -> None:
    assert mapped_checks(command, CHECKS) == expected


def test_tools_see_through_wrappers_and_runners() -> None:
    assert tools("FOO=1 time poetry run python -m mypy bot | tee out") == {"mypy", "tee"}
    assert tools("cargo test --all && make lint") == {"cargo test", "make lint"}
