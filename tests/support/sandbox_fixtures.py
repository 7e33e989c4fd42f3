"""pytest fixtures for real sandboxes; a test folder's conftest.py imports the ones it needs:

from tests.support.sandbox_fixtures import kind, sandbox  # noqa: F401  (pytest finds fixtures by name)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.sandbox.base import Sandbox
from tests.support.sandbox import BACKENDS, open_test_sandbox, skip_reason


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    """Each real backend in turn; skipped, with the reason, only where the machine cannot run it."""
    reason = skip_reason(request.param)
    if reason:
        pytest.skip(f"this machine cannot run {request.param}: {reason}")
    return request.param


@pytest.fixture
def sandbox(kind: str, tmp_path: Path) -> Iterator[Sandbox]:
    """A started sandbox of each backend over an empty workspace (`tmp_path / "ws"`)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = open_test_sandbox(kind, workspace)
    try:
        yield box
    finally:
        box.close()
