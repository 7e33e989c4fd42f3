"""The manifest flow's GitHub side: where the form is, and the code exchanged at the fake's conversion endpoint."""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from bot.errors import GitHubError
from bot.github.manifest import convert_code, form_url, web_and_api
from tests.support.fake_manifest import ManifestGitHub, Registration


@pytest.mark.parametrize(
    ("api", "enterprise", "expected"),
    [
        ("https://api.github.com", "", ("https://github.com", "https://api.github.com")),
        ("https://api.github.com/", "", ("https://github.com", "https://api.github.com")),
        ("https://api.acme.ghe.com", "", ("https://acme.ghe.com", "https://api.acme.ghe.com")),
        ("https://git.acme.test/api/v3/", "", ("https://git.acme.test", "https://git.acme.test/api/v3")),
        ("http://127.0.0.1:9000/", "", ("http://127.0.0.1:9000", "http://127.0.0.1:9000")),
        ("https://api.github.com", "https://git.acme.test/", ("https://git.acme.test", "https://git.acme.test/api/v3")),
    ],
)
def test_the_web_address_and_the_api_of_each_kind_of_github(api, enterprise, expected):
    assert web_and_api(api, enterprise) == expected


def test_the_form_is_the_persons_or_the_organisations():
    assert form_url("https://github.com", "", "s t") == "https://github.com/settings/apps/new?state=s%20t"
    assert (
        form_url("https://github.com", "octo-org", "x")
        == "https://github.com/organizations/octo-org/settings/apps/new?state=x"
    )


@pytest.fixture
def github():
    fake = ManifestGitHub()
    with fake.mock():
        yield fake
    assert fake.violations == []


def registered(fake: ManifestGitHub, **manifest: object) -> str:
    body = {
        "url": "https://ai-fix.test",
        "hook_attributes": {"url": "https://x.test/webhook"},
        "redirect_url": "https://x.test/cb",
        **manifest,
    }
    answer = fake.handle(
        httpx.Request(
            "POST", "https://api.github.test/settings/apps/new?state=abc", data={"manifest": json.dumps(body)}
        )
    )
    assert answer.status_code == 302
    back = urlsplit(answer.headers["location"])
    assert back.netloc == "x.test" and parse_qs(back.query)["state"] == ["abc"]
    return parse_qs(back.query)["code"][0]


def test_a_code_gives_the_app_with_its_credentials_once(github):
    code = registered(github, name="My Fixer", default_permissions={"issues": "write"})
    app = convert_code(github.base_url, code)
    assert (app.id, app.slug, app.name, app.owner) == (github.app_id, "my-fixer", "My Fixer", "octocat")
    assert app.pem.get_secret_value() == github.private_key_pem
    assert app.webhook_secret is not None and app.webhook_secret.get_secret_value() == github.webhook_secret
    assert app.install_url == "https://github.com/apps/my-fixer/installations/new"
    [call] = github.calls_to("apps/create-from-manifest")  # held to GitHub's request and response schemas
    assert call.token is None
    with pytest.raises(GitHubError, match="used already or is more than an hour old") as refused:
        convert_code(github.base_url, code)
    assert code not in str(refused.value)


def test_a_code_older_than_an_hour_is_not_exchanged(github):
    code = registered(github)
    old = github.registrations[code]
    github.registrations[code] = Registration(old.manifest, old.owner, time.time() - 3601, old.state)
    with pytest.raises(GitHubError, match="register the App again"):
        convert_code(github.base_url, code)


def test_the_fake_refuses_a_manifest_github_would_not_take(github):
    answer = github.handle(
        httpx.Request("POST", "https://api.github.test/settings/apps/new", data={"manifest": json.dumps({"name": "x"})})
    )
    assert answer.status_code == 422 and "'url' is a required property" in github.violations.pop()
