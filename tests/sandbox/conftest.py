"""Real sandboxes for the sandbox tests: one per backend, skipped only when the machine lacks it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.sandbox.base import Sandbox
from support_sandbox import BACKENDS, open_test_sandbox, skip_reason


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    reason = skip_reason(request.param)
    if reason:
        pytest.skip(f"this machine cannot run {request.param}: {reason}")
    return request.param


@pytest.fixture
def sandbox(kind: str, tmp_path: Path) -> Iterator[Sandbox]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = open_test_sandbox(kind, workspace)
    try:
        yield box
    finally:
        box.close()
