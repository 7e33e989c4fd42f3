"""The App manifest flow's GitHub side: where its form lives, and the code exchanged for the new App's credentials."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from githubkit import GitHub
from pydantic import BaseModel, SecretStr

from bot.errors import GitHubError
from bot.github.client import Refused, calling
from bot.github.retry import RetryPolicy

ENTERPRISE_API = "/api/v3"
"""GitHub Enterprise Server's REST API, under the web address."""


class NewApp(BaseModel):
    """What `POST /app-manifests/{code}/conversions` answers: the App GitHub just registered and its credentials."""

    id: int
    slug: str
    name: str
    html_url: str
    owner: str
    pem: SecretStr
    webhook_secret: SecretStr | None
    """None when the manifest's webhook was inactive (ai-fix's never is)."""
    client_id: str
    client_secret: SecretStr

    @property
    def install_url(self) -> str:
        """The page where the App is installed on an account and its repositories."""
        return f"{self.html_url.rstrip('/')}/installations/new"


def web_and_api(api_url: str, enterprise_url: str = "") -> tuple[str, str]:
    """GitHub's web address (the manifest form's host) and its REST API root, without trailing slashes.

    `enterprise_url` is a GitHub Enterprise Server's address (its API is under /api/v3); else the API is
    AIFIX_GITHUB_API_URL's: `api.github.com` → `github.com`, `api.X.ghe.com` → `X.ghe.com` (GitHub
    Enterprise Cloud), `https://ghes/api/v3` → `https://ghes`; any other root serves both.
    """
    if enterprise_url.strip():
        web = enterprise_url.strip().rstrip("/")
        return web, web + ENTERPRISE_API
    api = api_url.rstrip("/")
    parts = urlsplit(api)
    if parts.path.endswith(ENTERPRISE_API):
        return api.removesuffix(ENTERPRISE_API), api
    if parts.hostname and parts.hostname.startswith("api."):
        return urlunsplit((parts.scheme, parts.netloc.removeprefix("api."), parts.path, "", "")), api
    return api, api


def form_url(web: str, organization: str, state: str) -> str:
    """Where the browser posts the manifest: the signed-in person's account, or `organization`'s."""
    account = f"/organizations/{quote(organization, safe='')}" if organization else ""
    return f"{web}{account}/settings/apps/new?state={quote(state, safe='')}"


def convert_code(api: str, code: str) -> NewApp:
    """Exchange the code GitHub sent back for the new App (no credentials needed: the code is one, for an hour).

    A code GitHub no longer knows (used already, older than an hour) is a GitHubError saying to register again.
    """
    client: GitHub[Any] = GitHub(
        base_url=api.rstrip("/") + "/", auto_retry=RetryPolicy(), timeout=30.0, user_agent="ai-fix"
    )
    try:
        # The code is not named in an error: it is a credential until it is used.
        with calling("POST /app-manifests/…/conversions", handled=(404, 422)):
            data = client.rest.apps.create_from_manifest(code).json()
    except Refused as exc:
        raise GitHubError(
            f"GitHub refused the registration's code ({exc.status} {exc.message[:200]}): it was used already or is "
            "more than an hour old; register the App again from the setup page"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("owner"), dict):
        raise GitHubError("GitHub answered the code's exchange without the App; check AIFIX_GITHUB_API_URL")
    return NewApp.model_validate({**data, "owner": data["owner"].get("login", "")})
