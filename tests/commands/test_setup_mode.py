"""`ai-fix serve` with no App configured: the setup page registers one through the manifest flow, then serves webhooks.

Everything is real but GitHub: the installed `ai-fix serve` on loopback, its settings file on disk, its log;
GitHub is `ManifestGitHub` (the `settings/apps/new` form and the conversion endpoint, whose answer is held
to GitHub's schema for `apps/create-from-manifest`).
"""

from __future__ import annotations

import json
import stat
import time

import httpx
from dotenv import dotenv_values

from tests.support.fake_github import load_payload
from tests.support.setup_flow import SetupService, confirm_on_github, setup_service, to_github
from tests.support.webhooks import deliver


def credentials(svc: SetupService) -> list[str]:
    """Every credential GitHub handed over: none may appear in a page or a log line."""
    app = svc.github.converted[-1]
    pem_lines = [line for line in app["pem"].splitlines() if line and "PRIVATE KEY" not in line]
    return [app["webhook_secret"], app["client_secret"], *pem_lines]


def test_first_start_serves_the_setup_page_and_says_where_in_one_log_line(tmp_path):
    with setup_service(tmp_path) as svc:
        page = httpx.get(f"{svc.url}/")
        assert page.status_code == 200
        said = [line for line in svc.log_text().splitlines() if "setup mode" in line]
        assert len(said) == 1 and f"open {svc.url}/ to register one" in said[0]
        text = page.text
        assert 'value="ai-fix"' in text  # the name from app.yml, editable
        assert f'<code id="webhook-url">{svc.url}/webhook</code>' in text  # from the request's host
        assert "GitHub cannot deliver webhooks to" in text  # a loopback address is not one GitHub reaches
        # app.yml's permissions and events, each with the reason its comment gives
        assert "<td><code>contents</code></td><td>write</td><td>Push the fix branch" in text
        assert "once before a CI round (<code>ci.rerun_first</code>)" in text  # app.yml's `code` spans, as code
        assert "<td><code>workflow_run</code></td><td>a GitHub Actions workflow run completed" in text
        assert 'value="organization"' in text and 'id="enterprise"' in text
        assert "AIFIX_ANTHROPIC_API_KEY" in text  # no model key yet: said before registering
        # the service's own endpoints say what is missing instead of working half-way
        assert httpx.get(f"{svc.url}/healthz").status_code == 503
        refused = httpx.post(f"{svc.url}/webhook", content=b"{}")
        assert refused.status_code == 503 and "register one" in refused.json()["error"]


def test_register_writes_the_settings_file_and_the_service_then_takes_signed_deliveries(tmp_path):
    with setup_service(tmp_path, AIFIX_ANTHROPIC_API_KEY="sk-ant-unused-0123456789") as svc:
        client = svc.client
        action, manifest = to_github(client, name="ai-fix-test")
        assert action.startswith(f"{svc.github_url}/settings/apps/new?state=")
        sent = json.loads(manifest)
        assert sent["hook_attributes"] == {"url": f"{svc.url}/webhook", "active": True}
        assert sent["redirect_url"] == f"{svc.url}/setup/callback"
        assert sent["name"] == "ai-fix-test" and sent["default_permissions"]["contents"] == "write"
        back = confirm_on_github(action, manifest)
        assert back.startswith(f"{svc.url}/setup/callback?code=")

        done = client.get(back)
        assert done.status_code == 200, done.text
        assert (
            'id="serving"' in done.text and 'href="https://github.com/apps/ai-fix-test/installations/new"' in done.text
        )
        app = svc.github.converted[-1]
        assert stat.S_IMODE(svc.settings_file.stat().st_mode) == 0o600
        written = dotenv_values(svc.settings_file)
        assert written["AIFIX_APP_ID"] == str(svc.github.app_id)
        assert written["AIFIX_PRIVATE_KEY"] == svc.github.private_key_pem
        assert written["AIFIX_WEBHOOK_SECRET"] == app["webhook_secret"]
        assert (written["AIFIX_CLIENT_ID"], written["AIFIX_CLIENT_SECRET"]) == (app["client_id"], app["client_secret"])

        ping = load_payload("ping/event")
        assert deliver(client, "ping", ping, secret=app["webhook_secret"]).json()["outcome"] == "ping"
        assert deliver(client, "ping", ping, secret="not-the-secret-0123456789").status_code == 401
        assert client.get("/healthz").json() == {"ok": True}
        again = client.get(back)  # the code is spent, and the App exists: nothing more to register
        assert again.status_code == 409

        log = svc.log_text()
        assert "registered the GitHub App 'ai-fix-test'" in log and "answers webhooks now" in log
        for page in (done.text, client.get("/").text):
            assert not [c for c in credentials(svc) if c in page]
        assert not [c for c in credentials(svc) if c in log]
        assert svc.github.violations == []


def test_the_app_installed_on_a_repository_gets_its_labels(tmp_path):
    with setup_service(tmp_path, AIFIX_ANTHROPIC_API_KEY="sk-ant-unused-0123456789") as svc:
        client = svc.client
        client.get(confirm_on_github(*to_github(client)))
        secret = svc.github.webhook_secret
        created = load_payload("installation/created")
        installation = created["installation"]["id"]
        svc.github.installations[installation] = ["Codertocat/Hello-World"]
        assert deliver(client, "installation", created, secret=secret).status_code == 202
        deadline = time.monotonic() + 30
        while len(svc.github.labels.get("Codertocat/Hello-World", [])) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        made = {label["name"]: label for label in svc.github.labels["Codertocat/Hello-World"]}
        assert set(made) == {"ai-fix", "ai-fix:plan", "ai-fix:handoff", "ai-fix:unverified", "ai-fix:no-ci-fix"}
        assert made["ai-fix"]["description"].startswith("ai-fix works on this issue")
        assert svc.github.violations == []


def test_a_callback_with_a_wrong_or_missing_state_is_refused_and_its_code_kept_unused(tmp_path):
    with setup_service(tmp_path) as svc:
        client = svc.client
        back = confirm_on_github(*to_github(client))
        code = httpx.URL(back).params["code"]
        for query in (f"code={code}&state=forged", f"code={code}", "code=&state="):
            refused = client.get(f"/setup/callback?{query}")
            assert refused.status_code == 400 and "Start again from the setup page" in refused.text
        assert not svc.settings_file.exists()
        assert code in svc.github.registrations, "a refused callback never spends the code"
        assert svc.github.calls_to("apps/create-from-manifest") == []
        assert "refused a registration callback" in svc.log_text() and code not in svc.log_text()


def test_an_existing_settings_file_is_not_overwritten(tmp_path):
    with setup_service(tmp_path) as svc:
        client = svc.client
        back = confirm_on_github(*to_github(client))  # registered on GitHub, then a file appears before the callback
        svc.settings_file.write_text("AIFIX_OPENAI_API_KEY=mine\n")
        assert client.get(back).status_code == 409
        assert svc.settings_file.read_text() == "AIFIX_OPENAI_API_KEY=mine\n"
        assert svc.github.calls_to("apps/create-from-manifest") == [], "the code is not spent on a file it cannot write"
        page = client.get("/")
        assert "exists and is not overwritten" in page.text and 'id="submit" disabled' in page.text
        assert client.post("/setup/register", data={"name": "ai-fix", "account": "personal"}).status_code == 409


def test_force_replaces_the_file_and_keeps_the_old_one_beside_it(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / ".env").write_text("AIFIX_TRIGGER_LABEL=fix-me\n")
    with setup_service(tmp_path, "--force", AIFIX_ANTHROPIC_API_KEY="sk-ant-unused-0123456789") as svc:
        client = svc.client
        assert client.get(confirm_on_github(*to_github(client))).status_code == 200
        assert dotenv_values(svc.settings_file)["AIFIX_APP_ID"] == str(svc.github.app_id)
        assert (svc.cwd / ".env.previous").read_text() == "AIFIX_TRIGGER_LABEL=fix-me\n"


def test_an_organisation_on_github_enterprise_server(tmp_path):
    with setup_service(tmp_path, api=False, AIFIX_ANTHROPIC_API_KEY="sk-ant-unused-0123456789") as svc:
        svc.github.base_url = f"{svc.github_url}/api/v3/"  # GHES serves its API under /api/v3
        client = svc.client
        action, manifest = to_github(client, account="organization", org="octo-org", enterprise=svc.github_url)
        assert action.startswith(f"{svc.github_url}/organizations/octo-org/settings/apps/new?state=")
        assert client.get(confirm_on_github(action, manifest)).status_code == 200
        assert svc.github.converted[-1]["owner"]["login"] == "octo-org"
        written = dotenv_values(svc.settings_file)
        assert written["AIFIX_GITHUB_API_URL"] == f"{svc.github_url}/api/v3"
        # the service started with the file's API URL: its GET /app went to /api/v3
        ping = deliver(client, "ping", load_payload("ping/event"), secret=svc.github.webhook_secret)
        assert ping.status_code == 200
        assert svc.github.calls_to("apps/get-authenticated")
        assert svc.github.violations == []


def test_a_registered_app_whose_service_cannot_start_says_why(tmp_path):
    with setup_service(tmp_path) as svc:  # no model key: the App registers, the service cannot start
        client = svc.client
        done = client.get(confirm_on_github(*to_github(client)))
        assert done.status_code == 200 and 'id="start-error"' in done.text
        assert "AIFIX_ANTHROPIC_API_KEY and ANTHROPIC_API_KEY are not set" in done.text
        assert dotenv_values(svc.settings_file)["AIFIX_APP_ID"] == str(svc.github.app_id)
        assert client.post("/webhook", content=b"{}").status_code == 503
        assert "the service cannot start" in svc.log_text()
