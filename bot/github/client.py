"""The GitHub App (JWT) and a per-job client for one repository (installation token scoped to it)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypeVar, cast

import httpx
from githubkit import AppAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.exception import GitHubException, RequestFailed
from pydantic import SecretStr

from bot.errors import GitHubError
from bot.github.retry import RetryPolicy

T = TypeVar("T")
PER_PAGE = 100
ROLES = ("admin", "maintain", "write", "triage", "read")
Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]


class GitHubStatusError(GitHubError):
    """GitHub answered a call with an error status after its retries."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Refused(GitHubStatusError):
    """GitHub answered with a status the caller asked to handle itself (e.g. 422 "already exists")."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status} {message}", status)
        self.message = message


def _error_message(response: httpx.Response) -> str:
    """GitHub's `message` plus the messages of its `errors` list (where "already exists" is said), or their `code`
    where an error has no message (`already_exists` when a label is there)."""
    try:
        data = response.json()
        details = " ".join(
            str(e.get("message") or e.get("code", "")) for e in data.get("errors", []) if isinstance(e, dict)
        )
        return f"{data.get('message', '')} {details}".strip()
    except (ValueError, AttributeError):
        return response.text


@contextmanager
def calling(what: str = "", handled: tuple[int, ...] = ()) -> Iterator[None]:
    """Turn githubkit's errors into GitHubError; the message names the call and status, never headers or tokens.

    A status in `handled` becomes `Refused` for the caller to deal with. `what` defaults to the
    request's method and path.
    """
    try:
        yield
    except RequestFailed as exc:
        status = exc.response.status_code
        message = _error_message(exc.response.raw_response)
        if status in handled:
            raise Refused(status, message[:500]) from None
        request = exc.response.raw_request
        hint = {
            401: "the App's credentials were refused; check AIFIX_APP_ID and the private key",
            403: "the App lacks a permission or hit a rate limit; check app.yml's permissions",
            404: "not found, or the App is not installed on it",
        }.get(status, "GitHub failed; it will be retried later")
        raise GitHubStatusError(
            f"GitHub {what or f'{request.method} {request.url.path}'} answered {status} {message[:200]!r}: {hint}",
            status,
        ) from None
    except GitHubException as exc:
        origin = getattr(exc, "exc", None)  # what a RequestError wraps
        if origin is not None and type(origin).__module__.partition(".")[0] == "jwt":  # PyJWT refused the key
            raise GitHubError(
                f"the App's private key cannot sign its JWT ({type(origin).__name__}: {origin}); set "
                "AIFIX_PRIVATE_KEY or AIFIX_PRIVATE_KEY_PATH to the .pem downloaded from the App's settings page"
            ) from None
        raise GitHubError(
            f"GitHub {what or 'call'} failed ({exc.__class__.__name__}); check AIFIX_GITHUB_API_URL and the network"
        ) from None


class RepoClient:
    """The calls ai-fix makes on one repository, authenticated with an installation token scoped to it.

    `rest` is the underlying githubkit client for calls not wrapped here; `token` is for `git push`.
    """

    def __init__(
        self, rest: GitHub[Any], repo: str, token: SecretStr, *, app_id: int | None = None, bot_login: str = ""
    ) -> None:
        self.rest = rest
        self.repo = repo
        self.owner, self.name = repo.split("/", 1)
        self.token = token
        self.app_id = app_id
        """The App the token belongs to: only its own comments are ever edited."""
        self.bot_login = bot_login
        """The App's bot user, `<slug>[bot]`: only pull requests it authored are ai-fix's ("": none are)."""

    def _json(self, what: str, call: Callable[[], Any]) -> Any:
        with calling(what):
            return call().json()

    def _object(self, what: str, call: Callable[[], Any]) -> dict[str, Any]:
        data = self._json(what, call)
        if not isinstance(data, dict):
            raise GitHubError(
                f"{what}: GitHub answered {type(data).__name__}, not an object; check AIFIX_GITHUB_API_URL"
            )
        return data

    def _pages(self, what: str, call: Callable[[int], Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            batch = self._json(what, functools.partial(call, page))
            items.extend(batch)
            if len(batch) < PER_PAGE:
                return items
            page += 1

    def permission(self, username: str) -> str:
        """admin | maintain | write | triage | read | none, from the collaborator-permission API."""
        try:
            with calling(f"GET permission of {username} on {self.repo}"):
                data = self.rest.rest.repos.get_collaborator_permission_level(self.owner, self.name, username).json()
        except GitHubStatusError as exc:
            if exc.status == 404:
                return "none"
            raise
        role = data.get("role_name")
        return role if role in ROLES else (data.get("permission") or "none")

    def react_to_issue(self, number: int, content: Reaction = "eyes") -> None:
        self._json(
            f"POST reaction on {self.repo}#{number}",
            lambda: self.rest.rest.reactions.create_for_issue(self.owner, self.name, number, content=content),
        )

    def react_to_comment(self, comment_id: int, content: Reaction = "eyes") -> None:
        self._json(
            f"POST reaction on comment {comment_id} in {self.repo}",
            lambda: self.rest.rest.reactions.create_for_issue_comment(
                self.owner, self.name, comment_id, content=content
            ),
        )

    def get_issue(self, number: int) -> dict[str, Any]:
        return self._object(
            f"GET {self.repo}#{number}", lambda: self.rest.rest.issues.get(self.owner, self.name, number)
        )

    def list_issue_comments(self, number: int) -> list[dict[str, Any]]:
        return self._pages(
            f"GET comments of {self.repo}#{number}",
            lambda page: self.rest.rest.issues.list_comments(
                self.owner, self.name, number, per_page=PER_PAGE, page=page
            ),
        )

    def get_pull(self, number: int) -> dict[str, Any]:
        return self._object(
            f"GET pull request {self.repo}#{number}", lambda: self.rest.rest.pulls.get(self.owner, self.name, number)
        )

    def list_review_comments(self, number: int) -> list[dict[str, Any]]:
        return self._pages(
            f"GET review comments of {self.repo}#{number}",
            lambda page: self.rest.rest.pulls.list_review_comments(
                self.owner, self.name, number, per_page=PER_PAGE, page=page
            ),
        )

    def create_comment(self, number: int, body: str) -> dict[str, Any]:
        return self._object(
            f"POST comment on {self.repo}#{number}",
            lambda: self.rest.rest.issues.create_comment(self.owner, self.name, number, body=body),
        )

    def update_comment(self, comment_id: int, body: str) -> dict[str, Any]:
        return self._object(
            f"PATCH comment {comment_id} in {self.repo}",
            lambda: self.rest.rest.issues.update_comment(self.owner, self.name, comment_id, body=body),
        )

    def _is_own_comment(self, comment: dict[str, Any]) -> bool:
        """Written by a bot account and, where GitHub names the App that wrote it, by this App.

        A person cannot post as a bot, so pasting a marker into a comment never makes ai-fix edit it.
        """
        user = comment.get("user") or {}
        if user.get("type") != "Bot":
            return False
        app = comment.get("performed_via_github_app") or {}
        return self.app_id is None or not app or app.get("id") == self.app_id

    def find_marked_comment(self, number: int, marker: str) -> dict[str, Any] | None:
        """The bot's first comment on the issue carrying `marker` (only this App's own comments count)."""
        for comment in self.list_issue_comments(number):
            if self._is_own_comment(comment) and marker in (comment.get("body") or ""):
                return comment
        return None

    def upsert_marked_comment(
        self, number: int, body: str, marker: str, *, comment_id: int | None = None
    ) -> dict[str, Any]:
        """Update the bot's one comment on the issue carrying `marker`, or create it; returns the comment.

        `comment_id` (the comment an earlier call returned) saves listing the comments. An unchanged
        body makes no request; a comment someone deleted meanwhile (404) is posted again.
        """
        if comment_id is None:
            mine = self.find_marked_comment(number, marker)
            if mine is not None and mine.get("body") == body:
                return mine
            comment_id = int(mine["id"]) if mine else None
        if comment_id is not None:
            try:
                return self.update_comment(comment_id, body)
            except GitHubStatusError as exc:
                if exc.status != 404:
                    raise
        return self.create_comment(number, body)


class GitHubApp:
    """The App itself: signs JWTs and mints installation tokens for one repository at a time."""

    def __init__(
        self,
        app_id: int,
        private_key: str,
        *,
        base_url: str = "https://api.github.com",
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.app_id = app_id
        self.base_url = base_url.rstrip("/") + "/"
        self._options: dict[str, Any] = {
            "base_url": self.base_url,
            "auto_retry": retry or RetryPolicy(),
            "transport": transport,
            "timeout": timeout,
            "user_agent": "ai-fix",
        }
        self.app = GitHub(AppAuthStrategy(app_id, private_key), **self._options)
        self._about: dict[str, Any] = {}

    def about(self) -> dict[str, Any]:
        """The App as GitHub describes it (GET /app with its JWT, once): `slug`, `name`, `html_url`, ..."""
        if self._about:
            return self._about
        with calling("GET /app"):
            data: Any = self.app.rest.apps.get_authenticated().json()
        slug = data.get("slug") if isinstance(data, dict) else None
        if not isinstance(slug, str) or not slug:
            raise GitHubError("GET /app answered without the App's slug; check AIFIX_APP_ID and AIFIX_GITHUB_API_URL")
        self._about = data
        return self._about

    def bot_login(self) -> str:
        """This App's bot user, `<slug>[bot]`: the author of every PR and comment the App writes."""
        return f"{self.about()['slug']}[bot]"

    def installations(self) -> list[dict[str, Any]]:
        """Every installation of the App (`id`, `account`, `repository_selection`, ...)."""
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            with calling("GET /app/installations"):
                batch = cast(
                    list[dict[str, Any]], self.app.rest.apps.list_installations(per_page=PER_PAGE, page=page).json()
                )
            found += batch
            if len(batch) < PER_PAGE:
                return found
            page += 1

    def installation_repos(self, installation_id: int) -> list[str]:
        """The repositories (`owner/name`) an installation reaches, read with a token that can only read metadata."""
        with calling(f"POST access token for installation {installation_id}"):
            data = self.app.rest.apps.create_installation_access_token(
                installation_id, permissions={"metadata": "read"}
            ).json()
        client = GitHub(TokenAuthStrategy(data["token"]), **self._options)
        names: list[str] = []
        page = 1
        while True:
            with calling(f"GET repositories of installation {installation_id}"):
                batch = client.rest.apps.list_repos_accessible_to_installation(per_page=PER_PAGE, page=page).json()
            names += [repo["full_name"] for repo in batch.get("repositories", [])]
            if len(batch.get("repositories", [])) < PER_PAGE:
                return names
            page += 1

    def for_repo(self, installation_id: int, repo: str) -> RepoClient:
        """A client whose installation token reaches only `repo` (one token per job, valid for an hour)."""
        name, bot_login = repo.split("/", 1)[1], self.bot_login()
        with calling(f"POST access token for installation {installation_id}"):
            data = self.app.rest.apps.create_installation_access_token(installation_id, repositories=[name]).json()
        token = data["token"]
        client = GitHub(TokenAuthStrategy(token), **self._options)
        return RepoClient(client, repo, SecretStr(token), app_id=self.app_id, bot_login=bot_login)
