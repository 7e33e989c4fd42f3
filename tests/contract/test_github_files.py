"""GitHubRepoFiles and the one-comment rule against the fake GitHub (requests checked against GitHub's OpenAPI)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bot.contract.files import GitHubRepoFiles
from bot.errors import GitHubError
from bot.github.client import GitHubApp, RepoClient
from bot.github.retry import RetryPolicy
from tests.support.fake_github import FakeGitHub
from tests.support.github_files import serve_files
from tests.support.webhooks import INSTALLATION, REPO


@pytest.fixture
def client(fake_github: FakeGitHub) -> Iterator[RepoClient]:
    app = GitHubApp(
        fake_github.app_id, fake_github.private_key_pem, base_url=fake_github.base_url, retry=RetryPolicy(backoff=0.01)
    )
    yield app.for_repo(INSTALLATION, REPO)


def test_reads_files_and_listings_from_the_default_branch(fake_github: FakeGitHub, client: RepoClient) -> None:
    refs = serve_files(
        fake_github,
        REPO,
        {"pyproject.toml": "[tool.pytest.ini_options]\n", "src/app.py": "x = 1\n", "AGENTS.md": "Be brief. ✓"},
    )
    files = GitHubRepoFiles(client.rest, REPO, "main")
    assert files.read_text("AGENTS.md") == "Be brief. ✓"
    assert files.read_text("CLAUDE.md") is None
    assert files.read_text("src") is None  # a directory is not a file
    assert files.list_dir() == ["AGENTS.md", "pyproject.toml", "src/"]
    assert files.list_dir("src") == ["src/app.py"]
    assert set(refs) == {"main"}
    assert files.source == f"{REPO}@main"


def test_a_refused_read_is_a_github_error_naming_the_permission(fake_github: FakeGitHub, client: RepoClient) -> None:
    fake_github.on(
        "repos/get-content",
        lambda call: httpx.Response(403, json={"message": "Resource not accessible by integration"}),
    )
    with pytest.raises(GitHubError, match="Contents: read"):
        GitHubRepoFiles(client.rest, REPO, "main").read_text("AGENTS.md")
