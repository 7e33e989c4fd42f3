"""The GitHub output adapter against the fake GitHub (every request checked against GitHub's OpenAPI)."""

from collections.abc import Iterator

import httpx
import pytest

from bot.checks.models import CheckResult
from bot.checks.models import TestCase as Case
from bot.errors import GitHubError
from bot.github.client import GitHubApp, RepoClient
from bot.github.retry import RetryPolicy
from bot.labels import HANDOFF_LABEL, UNVERIFIED_LABEL
from bot.markers import marker
from bot.publish.checkrun import render_check_run
from bot.publish.github_out import GitHubOutput
from bot.redact import RedactionError
from tests.support.fake_pulls import PullsGitHub
from tests.support.results import handed_off
from tests.support.webhooks import INSTALLATION, REPO

CANARY = "canary-delivery-9c1e7a55"
BRANCH = "ai-fix/1-fix-the-readme"


@pytest.fixture
def fake() -> Iterator[PullsGitHub]:
    fake = PullsGitHub()
    fake.installations[INSTALLATION] = [REPO]
    fake.permissions[(REPO, "Codertocat")] = "admin"
    fake.add_issue(REPO, 1)
    with fake.mock():
        yield fake
    assert fake.violations == [], "requests that break GitHub's schema or auth rules"


@pytest.fixture
def client(fake: PullsGitHub) -> RepoClient:
    return GitHubApp(
        fake.app_id, fake.private_key_pem, base_url=fake.base_url, retry=RetryPolicy(backoff=0.001)
    ).for_repo(INSTALLATION, REPO)


@pytest.fixture
def out(client: RepoClient) -> GitHubOutput:
    return GitHubOutput(client, secrets=lambda: [CANARY, client.token.get_secret_value()])


def body(text: str = "") -> str:
    return f"{marker('pr', 1)}\n{text}\nFixes #1"


def test_one_draft_pr_per_issue_updated_in_place(fake: PullsGitHub, out: GitHubOutput) -> None:
    first = out.pulls.upsert(
        issue_number=1, branch=BRANCH, base="main", title="ai-fix: README", body=body("one"), existing=None
    )
    again = out.pulls.upsert(
        issue_number=1, branch=BRANCH, base="main", title="ai-fix: README", body=body("two"), existing=None
    )
    assert first.draft and first.number == again.number
    assert [p["body"] for p in fake.pulls_of(REPO)] == [body("two")]
    created = fake.calls_to("pulls/create")[0].json
    assert created["draft"] is True and created["head"] == BRANCH and created["title"] == "ai-fix: README"


def test_already_exists_answer_means_find_and_update(fake: PullsGitHub, out: GitHubOutput) -> None:
    out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body=body("one"), existing=None)
    # A lagging list (GitHub's search is eventually consistent) misses it once; create answers 422 "already exists".
    fake.script("GET", r"/pulls$", httpx.Response(200, json=[]), httpx.Response(200, json=[]))
    pr = out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body=body("two"), existing=None)
    assert len(fake.pulls_of(REPO)) == 1 and fake.pulls_of(REPO)[0]["body"] == body("two") and pr.number == 1 + 1
    assert len(fake.calls_to("pulls/create")) == 2


def test_a_pr_without_our_marker_on_our_branch_is_not_taken_over(fake: PullsGitHub, out: GitHubOutput) -> None:
    out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body="someone else's PR", existing=None)
    with pytest.raises(GitHubError, match="none that ai-fix opened carries its marker"):
        out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body=body(), existing=None)


@pytest.mark.parametrize(
    ("author", "head_repo"),
    [("mallory", "mallory/Hello-World"), ("mallory", REPO), ("ai-fix[bot]", "mallory/Hello-World")],
    ids=["a-strangers-fork", "a-person-on-the-branch", "our-bot-from-a-fork"],
)
def test_a_pr_ai_fix_did_not_open_from_this_repository_is_never_adopted(
    fake: PullsGitHub, out: GitHubOutput, author: str, head_repo: str
) -> None:
    """Branch `ai-fix/1-…` and the marker copied into the body: only the author and the head's repository tell."""
    theirs = fake.add_pull(REPO, 5, body("theirs"), author=author, head_repo=head_repo, head_ref=BRANCH)
    before = {k: theirs[k] for k in ("title", "body")}
    assert out.pulls.find(1, BRANCH) is None
    with pytest.raises(GitHubError, match="not a pull request ai-fix opened"):
        out.pulls.get(5)
    if head_repo == REPO:  # GitHub allows one open PR per head branch: opening ours is refused, not redirected
        with pytest.raises(GitHubError, match="none that ai-fix opened carries its marker"):
            out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body=body("ours"), existing=None)
    else:
        ours = out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body=body("ours"), existing=None)
        assert ours.number != 5 and fake.pulls[(REPO, ours.number)]["user"]["login"] == fake.bot_login
    assert {k: theirs[k] for k in ("title", "body")} == before
    assert [c for c in fake.calls if c.path.endswith("/pulls/5") and c.method != "GET"] == []
    assert (REPO, 5) not in fake.labels


def test_ready_and_back_to_draft_through_graphql_only_when_needed(fake: PullsGitHub, out: GitHubOutput) -> None:
    pr = out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body=body(), existing=None)
    pr = out.pulls.set_ready(pr, True)
    pr = out.pulls.set_ready(pr, True)
    assert not pr.draft and fake.graphql_calls == [{"mutation": "markPullRequestReadyForReview", "number": pr.number}]
    pr = out.pulls.set_ready(pr, False)
    assert pr.draft and fake.pulls_of(REPO)[0]["draft"] is True and len(fake.graphql_calls) == 2


def test_reviewer_label_and_refused_reviewer(fake: PullsGitHub, out: GitHubOutput) -> None:
    pr = out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body=body(), existing=None)
    assert out.pulls.request_review(pr, "Codertocat") is True
    assert out.pulls.request_review(pr, "stranger") is False  # 422 from GitHub: not a collaborator
    out.pulls.set_outcome_label(pr, "handed_off")
    out.pulls.set_outcome_label(pr, "handed_off")
    assert fake.labels[(REPO, pr.number)] == [HANDOFF_LABEL]
    out.pulls.set_outcome_label(pr, "unverified")
    assert fake.labels[(REPO, pr.number)] == [UNVERIFIED_LABEL], "one outcome label at a time"
    out.pulls.set_outcome_label(pr, "accepted")
    out.pulls.set_outcome_label(pr, "accepted")  # already gone: 404 is what we wanted
    assert fake.labels[(REPO, pr.number)] == []


def test_progress_comment_is_edited_in_place_and_found_by_marker(fake: PullsGitHub, out: GitHubOutput) -> None:
    fake.add_comment(REPO, 1, "Codertocat", f"{marker('progress', 1)} pasted by a person")
    first = out.comments.upsert_progress(1, f"{marker('progress', 1)}\nstep 1", None)
    second = out.comments.upsert_progress(
        1, f"{marker('progress', 1)}\nstep 2", None
    )  # a new attempt: found by its marker
    assert first["id"] == second["id"]
    assert [c["body"].splitlines()[-1] for c in fake.bot_comments(REPO, 1)] == ["step 2"]
    assert fake.comments[(REPO, 1)][0]["body"].endswith("pasted by a person")


def test_check_run_annotations_go_fifty_per_request_and_reruns_update(fake: PullsGitHub, out: GitHubOutput) -> None:
    result = handed_off()
    tests = [Case(id=f"t.py::test_{i}", status="fail", file="t.py", line=i + 1, message="boom") for i in range(75)]
    result.final.results.append(CheckResult(name="more", command="x", status="fail", tests=tests))
    output = render_check_run(result)
    first = out.checks.publish("c" * 40, output)
    second = out.checks.publish("c" * 40, output)
    assert first == second and len(fake.check_runs) == 1
    posted = [
        len(c.json["output"].get("annotations", []))
        for c in fake.calls
        if c.op_id in ("checks/create", "checks/update")
    ]
    assert max(posted) <= 50 and posted[0] == 50
    run = fake.check_runs[0]
    assert run["name"] == "ai-fix" and run["conclusion"] == "failure" and run["head_sha"] == "c" * 40


def test_thread_reply_is_posted_once_per_key(fake: PullsGitHub, out: GitHubOutput) -> None:
    pr = out.pulls.upsert(issue_number=1, branch=BRANCH, base="main", title="t", body=body(), existing=None)
    thread = fake.add_review_comment(REPO, pr.number, 77, "Codertocat", "rename this")
    assert out.comments.reply_once(pr, thread["id"], "Changed it", key="comment=1 head=abc") is True
    assert out.comments.reply_once(pr, thread["id"], "Changed it", key="comment=1 head=abc") is False
    assert [r["body"].splitlines()[-1] for r in fake.replies(REPO, pr.number)] == ["Changed it"]


def test_every_outgoing_text_is_redacted_and_nothing_is_posted_when_redaction_fails(
    fake: PullsGitHub, client: RepoClient
) -> None:
    token = client.token.get_secret_value()
    out = GitHubOutput(client, secrets=lambda: [CANARY, token])
    leaky = f"{CANARY} {token} {CANARY[2:12]}"
    pr = out.pulls.upsert(
        issue_number=1, branch=BRANCH, base="main", title=f"ai-fix: {leaky}", body=body(leaky), existing=None
    )
    out.comments.upsert_progress(1, body(leaky), None)
    sent = [str(c.json) for c in fake.calls if c.json]
    assert sent and not any(CANARY[2:12] in s or token in s for s in sent)

    def broken() -> list[str]:
        raise OSError("secret store unreadable")

    before = len(fake.calls)
    with pytest.raises(RedactionError):
        GitHubOutput(client, secrets=broken).pulls.upsert(
            issue_number=1, branch=BRANCH, base="main", title="t", body=body(), existing=pr
        )
    assert len(fake.calls) == before, "nothing may be sent when redaction fails"


def test_errors_name_the_call_whether_github_answers_or_not(fake: PullsGitHub, out: GitHubOutput) -> None:
    fake.on("pulls/list", lambda call: httpx.Response(403, json={"message": "Resource not accessible by integration"}))
    with pytest.raises(GitHubError, match=r"GET /repos/Codertocat/Hello-World/pulls answered 403 .*permission"):
        out.pulls.find(1, BRANCH)

    def unreachable(call: object) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    fake.on("pulls/list", unreachable)
    with pytest.raises(GitHubError, match=r"failed \(\w+\); check AIFIX_GITHUB_API_URL"):
        out.pulls.find(1, BRANCH)
