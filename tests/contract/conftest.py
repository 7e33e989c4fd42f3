"""The shared fake GitHub, with a fresh App id per test.

githubkit caches App JWTs process-wide by App id; each FakeGitHub signs with a new key, so reusing
the id would replay the previous test's JWT.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.support.fake_github import FakeGitHub
from tests.support.service import start_service  # noqa: F401  (fixture, uses fake_github below)
from tests.support.webhooks import INSTALLATION, REPO

_APP_IDS = itertools.count(700_000)


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(app_id=next(_APP_IDS))
    fake.installations[INSTALLATION] = [REPO]
    fake.permissions[(REPO, "Codertocat")] = "admin"
    fake.add_issue(REPO, 1, labels=("ai-fix", "bug"))
    with fake.mock():
        yield fake
    assert fake.violations == [], f"requests that break GitHub's schema or auth rules: {fake.violations}"
