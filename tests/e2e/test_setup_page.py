"""The setup page in a real headless browser (Debian's chromium): a first `ai-fix serve`, an App registered for an
organisation through the fake GitHub's manifest form, the service then answering webhooks. Screenshots of the
page before and after are saved to test-artifacts/."""

from __future__ import annotations

from dotenv import dotenv_values
from playwright.sync_api import Browser, expect

from bot.setup.manifest import shipped_manifest
from tests.support.browser import artifact
from tests.support.fake_github import load_payload
from tests.support.setup_flow import setup_service
from tests.support.webhooks import deliver


def test_a_first_start_registers_the_app_from_the_browser(tmp_path, browser: Browser) -> None:
    with setup_service(tmp_path, AIFIX_ANTHROPIC_API_KEY="sk-ant-unused-0123456789") as svc:
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        refused: list[str] = []
        page.on("console", lambda message: refused.append(message.text) if message.type == "error" else None)
        page.goto(f"{svc.url}/")
        expect(page.locator("h1")).to_have_text("Register ai-fix as a GitHub App")
        manifest = shipped_manifest()
        expect(page.locator("#permissions tr")).to_have_count(len(manifest.permissions) + 1)
        expect(page.locator("#events tr")).to_have_count(len(manifest.events) + 1)
        expect(page.locator("#webhook-url")).to_have_text(f"{svc.url}/webhook")
        page.screenshot(path=artifact("setup-page.png"), full_page=True)

        page.fill("#name", "ai-fix-browser")
        page.check("#organization")
        page.fill("#org", "octo-org")
        page.click("#submit")  # → our /setup/register → auto-submitted to GitHub's form → back to /setup/callback
        expect(page.locator("#registered")).to_contain_text("ai-fix-browser", timeout=60_000)
        expect(page.locator("#serving")).to_be_visible()
        expect(page.locator("#install")).to_have_attribute(
            "href", "https://github.com/apps/ai-fix-browser/installations/new"
        )
        assert page.url.startswith(f"{svc.url}/setup/callback?code=")
        page.screenshot(path=artifact("setup-done.png"), full_page=True)
        shown = page.content()
        page.close()

        app = svc.github.converted[-1]
        assert app["owner"]["login"] == "octo-org" and app["name"] == "ai-fix-browser"
        assert dotenv_values(svc.settings_file)["AIFIX_WEBHOOK_SECRET"] == app["webhook_secret"]
        for credential in (app["webhook_secret"], app["client_secret"], app["pem"].splitlines()[1]):
            assert credential not in shown
        assert refused == [], "the page's own policy (CSP) blocked nothing"
        ping = deliver(svc.client, "ping", load_payload("ping/event"), secret=app["webhook_secret"])
        assert ping.json()["outcome"] == "ping"
        assert svc.github.violations == []
