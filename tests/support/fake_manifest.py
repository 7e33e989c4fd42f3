"""GitHub's side of the App manifest flow: the `settings/apps/new` form and `POST /app-manifests/{code}/conversions`.

The form is a web page, not an API: a browser POSTs `manifest` (a JSON string) to
`/settings/apps/new?state=…` (a personal account) or `/organizations/ORG/settings/apps/new?state=…`; GitHub
shows the App's name for the person to confirm, creates the App and redirects the browser to the manifest's
`redirect_url` with `code` and the same `state`. Here the confirmation is implied: the POST answers that
redirect at once. The manifest is checked against the parameters GitHub documents ("Registering a GitHub
App from a manifest", github/docs `content/apps/sharing-github-apps/registering-a-github-app-from-a-manifest.md`
@ 07883a50b08fd8323647d18fd35ebb347fce7398), stricter than GitHub in one way: an unknown key is refused.

The conversion is an API operation (`apps/create-from-manifest`, checked like every other by `FakeGitHub`):
a code works once, within the hour GitHub allows, and the App it answers with is this fake's own (its id and
key), so every later call the new App makes is checked as usual.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

import httpx
import jsonschema

from .fake_github import Call, FakeGitHub, github_time

MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["url"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 34},
        "url": {"type": "string", "pattern": "^https?://"},
        "hook_attributes": {
            "type": "object",
            "required": ["url"],
            "additionalProperties": False,
            "properties": {"url": {"type": "string", "pattern": "^https?://"}, "active": {"type": "boolean"}},
        },
        "redirect_url": {"type": "string", "pattern": "^https?://"},
        "callback_urls": {"type": "array", "maxItems": 10, "items": {"type": "string"}},
        "setup_url": {"type": "string"},
        "description": {"type": "string"},
        "public": {"type": "boolean"},
        "default_events": {"type": "array", "items": {"type": "string"}},
        "default_permissions": {
            "type": "object",
            "additionalProperties": {"enum": ["read", "write", "admin"]},
        },
        "request_oauth_on_install": {"type": "boolean"},
        "setup_on_update": {"type": "boolean"},
    },
}
"""The manifest parameters GitHub documents (the name's 34 characters: GitHub's limit on App names)."""
FORM = re.compile(r"^(?:/organizations/(?P<org>[^/]+))?/settings/apps/new$")
CODE_SECONDS = 3600
"""GitHub: "You must complete this step of the GitHub App Manifest flow within one hour"."""


@dataclass
class Registration:
    manifest: dict[str, Any]
    owner: str
    """The account the App is registered on: the signed-in person's, or the organisation's."""
    at: float
    state: str


@dataclass
class ManifestGitHub(FakeGitHub):
    """FakeGitHub plus the manifest flow; `signed_in` is the person whose browser posts the form."""

    signed_in: str = "octocat"
    registrations: dict[str, Registration] = field(default_factory=dict)
    """code -> what the form registered; a code is removed when it is converted."""
    converted: list[dict[str, Any]] = field(default_factory=list)
    """Every conversion's answer (the App with its credentials), for tests that check where they went."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.on("apps/create-from-manifest", self._convert)

    @property
    def webhook_secret(self) -> str:
        """The webhook secret GitHub generated for the App registered last."""
        return str(self.converted[-1]["webhook_secret"])

    def _handle(self, request: httpx.Request) -> httpx.Response:
        form = FORM.match(request.url.path)
        if form is None:
            return super()._handle(request)
        return self._form(request, form["org"] or "")

    def _form(self, request: httpx.Request, org: str) -> httpx.Response:
        if request.method != "POST":
            return self._violation(f"{request.method} {request.url.path}: the manifest flow POSTs the form")
        fields = parse_qs(request.content.decode())
        try:
            manifest = json.loads(fields["manifest"][0])
            jsonschema.Draft202012Validator(MANIFEST_SCHEMA).validate(manifest)
        except (KeyError, ValueError) as exc:
            return self._violation(f"settings/apps/new: the form has no JSON `manifest` ({exc})")
        except jsonschema.ValidationError as exc:
            return self._violation(f"settings/apps/new: manifest {exc.message} at {list(exc.absolute_path)}")
        if "redirect_url" not in manifest:
            return self._violation("settings/apps/new: the manifest has no redirect_url to send the code back to")
        code = secrets.token_hex(20)
        state = request.url.params.get("state", "")
        self.registrations[code] = Registration(manifest, org or self.signed_in, time.time(), state)
        back = {"code": code, **({"state": state} if state else {})}
        return httpx.Response(302, headers={"location": f"{manifest['redirect_url']}?{urlencode(back)}"})

    def _convert(self, call: Call) -> httpx.Response:
        found = self.registrations.pop(call.params["code"], None)
        if found is None or time.time() - found.at > CODE_SECONDS:
            return httpx.Response(
                404, json={"message": "Not Found", "documentation_url": "https://docs.github.com/rest/apps/apps"}
            )
        manifest = found.manifest
        name = manifest.get("name") or "ai-fix"
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        app = self._example(call.op_id, "201")
        app.update(
            id=self.app_id,
            slug=slug,
            name=name,
            description=manifest.get("description", ""),
            external_url=manifest["url"],
            html_url=f"https://github.com/apps/{slug}",
            created_at=github_time(),
            updated_at=github_time(),
            permissions={**manifest.get("default_permissions", {}), "metadata": "read"},
            events=manifest.get("default_events", []),
            client_id=f"Iv23li{secrets.token_hex(7)}",
            client_secret=secrets.token_hex(20),
            webhook_secret=secrets.token_hex(20) if manifest.get("hook_attributes", {}).get("active", True) else None,
            pem=self.private_key_pem,
        )
        app["owner"].update(login=found.owner, type="Organization" if found.owner != self.signed_in else "User")
        self.bot_login = f"{slug}[bot]"
        self.converted.append(app)
        return httpx.Response(201, json=app)
