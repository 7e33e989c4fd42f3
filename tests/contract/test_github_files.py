"""GitHubRepoFiles and the one-comment rule against the fake GitHub (requests checked against GitHub's OpenAPI)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bot.contract.files import GitHubRepoFiles
from bot.contract.render import MARKER
from bot.contract.stage import upsert_marked_comment
from bot.errors import GitHubError
from bot.github.client import GitHubApp, RepoClient
from bot.github.retry import RetryPolicy
from tests.support.fake_github import FakeGitHub
from tests.support.webhooks import INSTALLATION, REPO

from .github_repo import allow_comment_edits, bot_comment, serve_files


@pytest.fixture
def client(fake_github: FakeGitHub) -> Iterator[RepoClient]:
    app = GitHubApp(fake_github.app_id, fake_github.private_key_pem, base_url=fake_github.base_url, retry=RetryPolicy(backoff=0.01))
    yield app.for_repo(INSTALLATION, REPO)


def test_reads_files_and_listings_from_the_default_branch(fake_github: FakeGitHub, client: RepoClient) -> None:
    refs = serve_files(fake_github, REPO, {"pyproject.toml": "[tool.pytest.ini_options]\n", "src/app.py": "x = 1\n", "AGENTS.md": "Be brief. ✓"})
    files = GitHubRepoFiles(client.rest, REPO, "main")
    assert files.read_text("AGENTS.md") == "Be brief. ✓"
    assert files.read_text("CLAUDE.md") is None
    assert files.read_text("src") is None  # a directory is not a file
    assert files.list_dir() == ["AGENTS.md", "pyproject.toml", "src/"]
    assert files.list_dir("src") == ["src/app.py"]
    assert set(refs) == {"main"}
    assert files.source == f"{REPO}@main"


def test_a_refused_read_is_a_github_error_naming_the_permission(fake_github: FakeGitHub, client: RepoClient) -> None:
    fake_github.on("repos/get-content", lambda call: httpx.Response(403, json={"message": "Resource not accessible by integration"}))
    with pytest.raises(GitHubError, match="Contents: read"):
        GitHubRepoFiles(client.rest, REPO, "main").read_text("AGENTS.md")


def test_the_comment_is_created_once_then_updated_in_place(fake_github: FakeGitHub, client: RepoClient) -> None:
    edits = allow_comment_edits(fake_github)
    upsert_marked_comment(client, 1, f"{MARKER}\nfirst")
    assert [body for _, _, body in fake_github.created_comments] == [f"{MARKER}\nfirst"]
    mine = bot_comment(fake_github, REPO, 1, f"{MARKER}\nfirst")  # what GitHub now holds
    upsert_marked_comment(client, 1, f"{MARKER}\nsecond")
    upsert_marked_comment(client, 1, f"{MARKER}\nsecond")  # unchanged: no request at all
    assert edits == [(mine["id"], f"{MARKER}\nsecond")]
    assert len(fake_github.created_comments) == 1


def test_a_pasted_marker_in_someone_elses_comment_is_not_ours(fake_github: FakeGitHub, client: RepoClient) -> None:
    edits = allow_comment_edits(fake_github)
    fake_github.add_comment(REPO, 1, "mallory", f"{MARKER}\nplease edit me")
    upsert_marked_comment(client, 1, f"{MARKER}\ncontract")
    assert edits == []
    assert [body for _, _, body in fake_github.created_comments] == [f"{MARKER}\ncontract"]
