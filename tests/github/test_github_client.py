"""githubkit App auth, per-repository tokens, retries and errors, against the fake GitHub (respx)."""

import time

import httpx
import pytest
from githubkit.exception import RequestFailed

from bot.errors import GitHubError
from bot.github.client import GitHubApp, GitHubStatusError
from bot.github.retry import RetryPolicy
from tests.support.webhooks import REPO

FAST = RetryPolicy(backoff=0.01)


@pytest.fixture
def app(fake_github) -> GitHubApp:
    return GitHubApp(fake_github.app_id, fake_github.private_key_pem, base_url=fake_github.base_url, retry=FAST)


def test_each_job_gets_a_token_for_its_one_repository(app, fake_github):
    client = app.for_repo(1, REPO)
    assert client.permission("Codertocat") == "admin"
    [mint] = fake_github.calls_to("apps/create-installation-access-token")
    assert mint.json == {"repositories": ["Hello-World"]} and mint.token is None  # minted with the App's JWT
    assert fake_github.tokens[client.token.get_secret_value()].repos == [REPO]
    # The same token cannot reach the installation's other repository.
    with pytest.raises(RequestFailed) as refused:
        client.rest.rest.repos.get_collaborator_permission_level("Codertocat", "Other", "Codertocat")
    assert refused.value.response.status_code == 401
    assert fake_github.violations == [
        "repos/get-collaborator-permission-level: token scoped to ['Codertocat/Hello-World'] used on Codertocat/Other"
    ]
    fake_github.violations.clear()  # that refusal was the point of this step


def test_the_apps_bot_user_is_read_from_get_app_with_the_jwt(app, fake_github):
    fake_github.bot_login = "my-fixer[bot]"
    assert app.bot_login() == "my-fixer[bot]"
    [call] = fake_github.calls_to("apps/get-authenticated")
    assert call.token is None  # the App's JWT, checked by the fake, as GitHub requires
    # Read once: each repository's client carries it (the jobs tell ai-fix's pull requests by it), no second GET.
    assert app.for_repo(1, REPO).bot_login == "my-fixer[bot]"
    assert len(fake_github.calls_to("apps/get-authenticated")) == 1
    fake_github.script("GET", "^/app$", httpx.Response(200, json={"id": 1}))
    fresh = GitHubApp(fake_github.app_id, fake_github.private_key_pem, base_url=fake_github.base_url, retry=FAST)
    with pytest.raises(GitHubError, match="without the App's slug"):
        fresh.bot_login()


def test_permissions_come_from_the_collaborator_api(app, fake_github):
    fake_github.permissions[(REPO, "maint")] = "maintain"
    fake_github.permissions[(REPO, "tri")] = "triage"
    client = app.for_repo(1, REPO)
    assert [client.permission(u) for u in ("maint", "tri", "nobody")] == ["maintain", "triage", "none"]


def test_an_uninstalled_repository_is_a_clear_error(app):
    with pytest.raises(GitHubStatusError, match="answered 404 .*not installed"):
        app.for_repo(99, REPO)


def test_server_errors_are_retried_with_backoff(app, fake_github):
    client = app.for_repo(1, REPO)
    fake_github.script("GET", "/permission$", httpx.Response(502), httpx.Response(503, json={"message": "busy"}))
    assert client.permission("Codertocat") == "admin"
    assert fake_github.pending_scripts() == 0


def test_server_errors_give_up_after_the_retries_without_leaking_the_token(app, fake_github):
    client = app.for_repo(1, REPO)
    fake_github.script("POST", "/reactions$", *[httpx.Response(502, json={"message": "Server Error"})] * 4)
    with pytest.raises(GitHubStatusError) as failed:
        client.react_to_issue(1)
    assert failed.value.status == 502 and "answered 502" in str(failed.value)
    assert client.token.get_secret_value() not in str(failed.value)


def test_retry_after_is_honoured(app, fake_github):
    client = app.for_repo(1, REPO)
    fake_github.script(
        "GET",
        "/permission$",
        httpx.Response(
            403, headers={"retry-after": "1"}, json={"message": "You have exceeded a secondary rate limit."}
        ),
    )
    started = time.monotonic()
    assert client.permission("Codertocat") == "admin"
    assert time.monotonic() - started >= 1.0


def test_x_ratelimit_reset_is_honoured(app, fake_github):
    client = app.for_repo(1, REPO)
    reset = int(time.time()) + 2
    fake_github.script(
        "GET",
        "/comments$",
        httpx.Response(
            403,
            headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
            json={"message": "API rate limit exceeded"},
        ),
    )
    client.list_issue_comments(1)
    assert time.time() >= reset - 0.05


def test_a_rate_limit_longer_than_max_wait_fails_now(fake_github):
    app = GitHubApp(
        fake_github.app_id,
        fake_github.private_key_pem,
        base_url=fake_github.base_url,
        retry=RetryPolicy(backoff=0.01, max_wait=5),
    )
    client = app.for_repo(1, REPO)
    fake_github.script(
        "POST", "/comments$", httpx.Response(429, headers={"retry-after": "3600"}, json={"message": "slow down"})
    )
    started = time.monotonic()
    with pytest.raises(GitHubStatusError, match="answered 429"):
        client.create_comment(1, "hello")
    assert time.monotonic() - started < 1.0


def test_reads_page_through_long_lists(app, fake_github):
    for i in range(130):
        fake_github.add_comment(REPO, 1, "Codertocat", f"comment {i}")
    comments = app.for_repo(1, REPO).list_issue_comments(1)
    assert [c["body"] for c in comments] == [f"comment {i}" for i in range(130)]
    assert [c.query["page"] for c in fake_github.calls_to("issues/list-comments")] == ["1", "2"]


def test_reactions_and_comments_are_sent_as_github_documents_them(app, fake_github):
    client = app.for_repo(1, REPO)
    client.react_to_issue(1)
    client.react_to_issue(1)  # GitHub answers 200 for an existing reaction: not an error
    client.react_to_comment(42)
    created = client.create_comment(1, "Working on it.")
    assert fake_github.reactions == [(REPO, "issue:1", "eyes"), (REPO, "comment:42", "eyes")]
    assert created["body"] == "Working on it." and fake_github.created_comments == [(REPO, 1, "Working on it.")]


def test_the_marked_comment_is_created_once_then_updated_in_place(app, fake_github):
    client = app.for_repo(1, REPO)
    fake_github.keeps_comments = True  # what the App posts is listed afterwards, as on GitHub
    client.upsert_marked_comment(1, "<!-- m -->\nfirst", "<!-- m -->")
    [mine] = fake_github.comments[(REPO, 1)]
    updated = client.upsert_marked_comment(1, "<!-- m -->\nsecond", "<!-- m -->")
    client.upsert_marked_comment(1, "<!-- m -->\nsecond", "<!-- m -->")  # unchanged: no request at all
    assert updated["id"] == mine["id"] and updated["body"] == "<!-- m -->\nsecond"
    assert fake_github.edited_comments == [(mine["id"], "<!-- m -->\nsecond")]
    assert len(fake_github.calls_to("issues/create-comment")) == 1


def test_only_this_apps_own_marked_comment_is_edited(app, fake_github):
    """Pasting the marker (as a person, or as another App's bot) never makes ai-fix edit that comment."""
    client = app.for_repo(1, REPO)
    fake_github.add_comment(REPO, 1, "mallory", "<!-- m --> please edit me")
    fake_github.add_bot_comment(REPO, 1, "<!-- m --> another App's", app_id=fake_github.app_id + 1)
    created = client.upsert_marked_comment(1, "<!-- m -->\nours", "<!-- m -->")
    assert fake_github.edited_comments == []
    assert [c.json["body"] for c in fake_github.calls_to("issues/create-comment")] == ["<!-- m -->\nours"]
    assert created["body"] == "<!-- m -->\nours"


def test_a_deleted_marked_comment_is_posted_again(app, fake_github):
    client = app.for_repo(1, REPO)
    gone = fake_github.add_bot_comment(REPO, 1, "<!-- m -->\nold")
    fake_github.comments[(REPO, 1)].remove(gone)  # deleted after it was known, e.g. between rounds
    client.upsert_marked_comment(1, "<!-- m -->\nnew", "<!-- m -->", comment_id=gone["id"])
    assert [c.json["body"] for c in fake_github.calls_to("issues/update-comment")] == ["<!-- m -->\nnew"]
    assert [c.json["body"] for c in fake_github.calls_to("issues/create-comment")] == ["<!-- m -->\nnew"]


def test_a_refused_comment_edit_names_the_call(app, fake_github):
    client = app.for_repo(1, REPO)
    fake_github.add_bot_comment(REPO, 1, "<!-- m -->\nold")
    fake_github.on(
        "issues/update-comment",
        lambda call: httpx.Response(403, json={"message": "Resource not accessible by integration"}),
    )
    with pytest.raises(GitHubStatusError, match="PATCH comment .* answered 403.*permission") as refused:
        client.upsert_marked_comment(1, "<!-- m -->\nnew", "<!-- m -->")
    assert refused.value.status == 403 and fake_github.calls_to("issues/create-comment") == []
