"""Everything a run publishes on GitHub, through githubkit; every text passes `safe_outgoing` here.

This adapter is the one place outgoing text leaves the process, so redaction cannot be forgotten by
a caller: a text that cannot be redacted raises RedactionError before any request is made. Retries
with backoff on 5xx and rate limits come from the client the queue builds for the job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from bot.errors import GitHubError
from bot.github.client import Refused, RepoClient, calling
from bot.labels import HANDOFF_LABEL, UNVERIFIED_LABEL
from bot.markdown import unlinked
from bot.markers import PR_KIND, PROGRESS_KIND, find_marker, marker, own_pull
from bot.publish.checkrun import CHECK_NAME, CheckRunOutput
from bot.redact import RedactionError, safe_outgoing
from bot.vocabulary import FAILED, HANDED_OFF, UNVERIFIED

OUTCOME_LABELS = {HANDED_OFF: HANDOFF_LABEL, FAILED: HANDOFF_LABEL, UNVERIFIED: UNVERIFIED_LABEL}
"""The label a PR carries for each outcome that is not a verified fix; an accepted PR carries neither."""
REPLY_KIND = "reply"

_READY = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }"
_DRAFT = "mutation($id: ID!) { convertPullRequestToDraft(input: {pullRequestId: $id}) { pullRequest { isDraft } } }"


class PullRef(BaseModel):
    number: int
    node_id: str
    html_url: str
    draft: bool
    head_ref: str
    state: str = "open"
    body: str = ""
    head_sha: str = ""
    base_ref: str = ""


def pull_ref(data: Mapping[str, Any]) -> PullRef:
    """The fields ai-fix uses of a pull request object from the REST API."""
    return PullRef(
        number=data["number"],
        node_id=data.get("node_id", ""),
        html_url=data.get("html_url", ""),
        draft=bool(data.get("draft")),
        head_ref=(data.get("head") or {}).get("ref", ""),
        state=data.get("state", "open"),
        body=data.get("body") or "",
        head_sha=(data.get("head") or {}).get("sha", ""),
        base_ref=(data.get("base") or {}).get("ref", ""),
    )


def answer(call: Callable[[], Any]) -> Any:
    """One API call's decoded answer; a failure after the client's retries says which call and status."""
    with calling():
        return call().json()


class Redactor:
    """The job's secrets taken out of an outgoing text; not knowing them means posting nothing."""

    def __init__(self, secrets: Callable[[], Iterable[str]]) -> None:
        self._secrets = secrets

    def text(self, text: str) -> str:
        try:
            held = list(self._secrets())
        except Exception as exc:  # not knowing the secrets means not knowing what to remove: post nothing
            raise RedactionError(
                f"the secrets to redact could not be read ({type(exc).__name__}); nothing was posted"
            ) from exc
        return safe_outgoing(text, held)

    def annotation(self, annotation: dict[str, Any]) -> dict[str, Any]:
        return {k: self.text(v) if isinstance(v, str) else v for k, v in annotation.items()}


class GitHubOutput:
    """Writes one job's output into its repository through the job's installation-scoped client.

    Each part owns one kind of object on GitHub and shares the one redactor, so no text skips it."""

    def __init__(self, client: RepoClient, *, secrets: Callable[[], Iterable[str]]) -> None:
        redactor = Redactor(secrets)
        self.pulls = PullRequests(client, redactor)
        self.checks = CheckRuns(client, redactor)
        self.comments = Comments(client, redactor)


class PullRequests:
    """The one pull request per issue: found by branch and marker, opened as a draft, its state and labels."""

    def __init__(self, client: RepoClient, redactor: Redactor) -> None:
        self.client, self.gh, self.redactor = client, client.rest, redactor
        self.owner, self.name = client.owner, client.name

    def _ours(self, data: Mapping[str, Any], issue_number: int) -> bool:
        """ai-fix's PR for this issue: opened by this App, head in this repository, the issue's marker in its body."""
        return own_pull(dict(data), self.client.bot_login) and find_marker(data.get("body"), PR_KIND) == issue_number

    def find(self, issue_number: int, branch: str) -> PullRef | None:
        """The one PR for this issue: its branch and marker, open first; a closed one is not reused."""
        exact = answer(
            lambda: self.gh.rest.pulls.list(self.owner, self.name, head=f"{self.owner}:{branch}", state="open")
        )
        for data in exact:
            if self._ours(data, issue_number):
                return pull_ref(data)
        # The title (and so the branch slug) may have changed since the PR was opened.
        prefix = f"ai-fix/{issue_number}-"
        for page in range(1, 11):

            def listing(page: int = page) -> Any:
                return self.gh.rest.pulls.list(self.owner, self.name, state="open", per_page=100, page=page)

            pulls = answer(listing)
            for data in pulls:
                if (data.get("head") or {}).get("ref", "").startswith(prefix) and self._ours(data, issue_number):
                    return pull_ref(data)
            if len(pulls) < 100:
                break
        return None

    def get(self, number: int) -> PullRef:
        """A pull request ai-fix opened, by number; any other is refused, never written to."""
        data = self.client.get_pull(number)
        if not own_pull(data, self.client.bot_login):
            raise GitHubError(
                f"#{number} in {self.owner}/{self.name} is not a pull request ai-fix opened from a branch of this "
                "repository; ai-fix leaves it alone (start again from the issue)"
            )
        return pull_ref(data)

    def upsert(
        self, *, issue_number: int, branch: str, base: str, title: str, body: str, existing: PullRef | None
    ) -> PullRef:
        """Open a draft PR, or update the body of the existing one; "already exists" means find and update it."""
        title, body = unlinked(self.redactor.text(title)), self.redactor.text(body)
        pr = existing or self.find(issue_number, branch)
        if pr is None:
            try:
                with calling(handled=(422,)):
                    data = self.gh.rest.pulls.create(
                        self.owner, self.name, title=title, head=branch, base=base, body=body, draft=True
                    ).json()
                return pull_ref(data)
            except Refused as exc:
                if "already exists" not in exc.message:
                    raise GitHubError(f"GitHub refused to open the pull request for {branch}: {exc.message}") from None
                pr = self.find(issue_number, branch)
                if pr is None:
                    raise GitHubError(
                        f"GitHub says a pull request for {branch} exists but none that ai-fix opened carries its marker "
                        f"for #{issue_number}; close it or delete the branch, then retry"
                    ) from exc
        data = answer(lambda: self.gh.rest.pulls.update(self.owner, self.name, pr.number, title=title, body=body))
        return pull_ref(data)

    def update_body(self, pr: PullRef, body: str) -> PullRef:
        """Replace the PR body (its hidden records changed); the title stays."""
        text = self.redactor.text(body)
        data = answer(lambda: self.gh.rest.pulls.update(self.owner, self.name, pr.number, body=text))
        return pull_ref(data)

    def request_review(self, pr: PullRef, login: str) -> bool:
        """Ask the person who triggered the run to review; False when GitHub will not (e.g. not a collaborator)."""
        if not login:
            return False
        try:
            with calling(handled=(422,)):
                self.gh.rest.pulls.request_reviewers(self.owner, self.name, pr.number, reviewers=[login])
        except Refused:
            return False
        return True

    def set_ready(self, pr: PullRef, ready: bool) -> PullRef:
        """Draft ↔ ready through GraphQL (REST ignores `draft` on update); no call when already there."""
        if pr.draft != ready:
            return pr
        with calling("GraphQL " + ("markPullRequestReadyForReview" if ready else "convertPullRequestToDraft")):
            self.gh.graphql(_READY if ready else _DRAFT, {"id": pr.node_id})
        return pr.model_copy(update={"draft": not ready})

    def set_outcome_label(self, pr: PullRef, outcome: str) -> None:
        """The outcome's label on the PR (`ai-fix:handoff`, `ai-fix:unverified`), the other one removed."""
        wanted = OUTCOME_LABELS.get(outcome)
        if wanted:
            answer(lambda: self.gh.rest.issues.add_labels(self.owner, self.name, pr.number, labels=[wanted]))
        for label in {HANDOFF_LABEL, UNVERIFIED_LABEL} - {wanted}:
            try:
                with calling(handled=(404,)):
                    self.gh.rest.issues.remove_label(self.owner, self.name, pr.number, label)
            except Refused:
                pass  # the label was not there, which is what we want


class CheckRuns:
    """The `ai-fix` check run on a head commit."""

    def __init__(self, client: RepoClient, redactor: Redactor) -> None:
        self.gh, self.redactor = client.rest, redactor
        self.owner, self.name = client.owner, client.name

    def publish(self, head_sha: str, output: CheckRunOutput, *, details_url: str = "") -> int:
        """One `ai-fix` check run per head commit (updated on a re-run); annotations go 50 per request."""
        batches = output.batches()
        payload = {
            "title": self.redactor.text(output.title),
            "summary": self.redactor.text(output.summary),
            "text": self.redactor.text(output.text),
            "annotations": [self.redactor.annotation(a) for a in batches[0]],
        }
        fields: dict[str, Any] = {"status": "completed", "conclusion": output.conclusion, "output": payload}
        if details_url:
            fields["details_url"] = details_url
        existing = answer(
            lambda: self.gh.rest.checks.list_for_ref(self.owner, self.name, head_sha, check_name=CHECK_NAME)
        )
        runs = existing.get("check_runs", [])
        if runs:
            run_id = int(runs[0]["id"])
            answer(lambda: self.gh.rest.checks.update(self.owner, self.name, run_id, **fields))
        else:
            created = answer(
                lambda: self.gh.rest.checks.create(self.owner, self.name, name=CHECK_NAME, head_sha=head_sha, **fields)
            )
            run_id = int(created["id"])
        for batch in batches[1:]:
            more = {
                "title": payload["title"],
                "summary": payload["summary"],
                "annotations": [self.redactor.annotation(a) for a in batch],
            }
            answer(lambda more=more: self.gh.rest.checks.update(self.owner, self.name, run_id, output=more))  # type: ignore[misc]
        return run_id


class Comments:
    """ai-fix's comments: the one progress comment per issue, replies, and review-thread replies posted once."""

    def __init__(self, client: RepoClient, redactor: Redactor) -> None:
        self.client, self.redactor = client, redactor
        self._review_comments: dict[int, list[dict[str, Any]]] = {}
        """PR number -> its review comments, listed once per job and extended with the replies posted since."""

    def upsert(self, issue_number: int, body: str, tag: str, comment_id: int | None = None) -> dict[str, Any]:
        """The one bot comment carrying the hidden `tag` on the issue, edited in place; created only when there is none."""
        return self.client.upsert_marked_comment(issue_number, self.redactor.text(body), tag, comment_id=comment_id)

    def upsert_progress(self, issue_number: int, body: str, comment_id: int | None) -> dict[str, Any]:
        """The one comment ai-fix keeps on the issue (found by its marker unless its id is known)."""
        return self.upsert(issue_number, body, marker(PROGRESS_KIND, issue_number), comment_id)

    def progress_body(self, issue_number: int) -> str:
        """What the issue's progress comment says now ("" when there is none)."""
        found = self.client.find_marked_comment(issue_number, marker(PROGRESS_KIND, issue_number))
        return str(found.get("body") or "") if found else ""

    def post(self, number: int, body: str) -> dict[str, Any]:
        """A new comment on an issue or pull request (a reply to a command, say)."""
        return self.client.create_comment(number, self.redactor.text(body))

    def reply_once(self, pr: PullRef, comment_id: int, body: str, *, key: str) -> bool:
        """Reply in a review thread unless a reply with this key is already there (a redelivered review)."""
        tag = f"<!-- ai-fix:{REPLY_KIND} {key} -->"
        comments = self._review_comments.get(pr.number)
        if comments is None:
            comments = self._review_comments[pr.number] = self.client.list_review_comments(pr.number)
        if any(c.get("in_reply_to_id") == comment_id and tag in (c.get("body") or "") for c in comments):
            return False
        text = self.redactor.text(f"{tag}\n{body}")
        answer(
            lambda: self.client.rest.rest.pulls.create_reply_for_review_comment(
                self.client.owner, self.client.name, pr.number, comment_id, body=text
            )
        )
        comments.append({"in_reply_to_id": comment_id, "body": text})
        return True
