"""The run viewer in a real headless browser, against a real `ai-fix serve` (see world.py for what is real).

One job is followed from the link GitHub got, live while the model is held mid-run, then opened
again once finished; the same signed link is in the issue comment, the PR body and the check run.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from bot.commands.demo import sample
from bot.markers import PR_KIND, PROGRESS_KIND, find_marker
from bot.model.base import ModelRequest
from bot.model.scripted import Turn, call, turn
from bot.queue.store import Store
from bot.viewer.links import sign
from tests.support.browser import artifact
from tests.support.runs import CHECK, FIX, PLAN, SAMPLE_CRITERIA, VIEW
from tests.support.service import wait_until
from tests.support.webhooks import REPO, labeled
from tests.support.world import CANARY, SECRETS, SENDER, World, secrets_in, start_world

LINK = re.compile(r"\((http://127\.0\.0\.1:\d+/runs/(\d+)\?exp=(\d+)&sig=([0-9a-f]{64}))\)")
ADMIN = {"Authorization": f"Bearer {SECRETS['AIFIX_ADMIN_TOKEN']}"}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with ExitStack() as stack:
        yield start_world(tmp_path_factory.mktemp("viewer"), stack, public=True)


@pytest.fixture(scope="module")
def job(world: World) -> Iterator[dict]:
    """A job whose third model turn is held until `job["release"]` is set; its link is read from the issue comment."""
    release = threading.Event()

    def held(request: ModelRequest) -> Turn:
        assert release.wait(60), "the test never let the model answer"
        return turn("add() subtracts: use a + b.", FIX, CHECK)

    world.script(
        [
            turn("add(2, 3) must be 5: fix add() and run the tests.", PLAN),
            turn("Look at the code first.", VIEW),
            held,
            turn(
                "Done.",
                call(
                    "finish",
                    summary=f"Fixed add(); the key is {CANARY}.",
                    risks=["none known"],
                    criteria=SAMPLE_CRITERIA,
                ),
            ),
        ]
    )
    title, _, body = sample()[1].partition("\n")
    world.github.add_issue(
        REPO, 1, title=title.removeprefix("# ").strip(), body=body, author=SENDER, labels=("ai-fix",)
    )
    payload = labeled(1, sender=SENDER)
    payload["issue"].update(title=title.removeprefix("# ").strip(), body=body)
    job_id = world.send("issues", payload).json()["job_id"]

    def link_in_comment() -> str | None:
        for c in world.github.bot_comments(REPO, 1):
            if find_marker(c["body"], PROGRESS_KIND) == 1 and (m := LINK.search(c["body"])):
                return m.group(1)
        return None

    link = wait_until(link_in_comment, timeout=30)
    yield {"id": job_id, "link": link, "release": release}
    release.set()


def steps(page: Page) -> list[tuple[str, str]]:
    return [
        (s.get_attribute("data-step") or "", s.get_attribute("data-status") or "")
        for s in page.locator("li.step").all()
    ]


def test_a_running_job_updates_its_page_live_from_the_link_in_the_issue_comment(
    world: World, job: dict, browser: Browser
) -> None:
    assert job["link"].startswith(f"{world.url}/runs/{job['id']}?exp=")
    wait_until(lambda: len(world.model_api.bodies) >= 3, timeout=60)  # the third turn is held: two steps traced
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(job["link"])
    expect(page.locator("#run-outcome")).to_have_attribute("data-status", "running")
    assert steps(page) == [("1", "ok"), ("2", "ok")]
    expect(page.locator("#live-status")).to_have_text(re.compile("live"))
    page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded

    job["release"].set()
    expect(page.locator("li.step[data-step='4']")).to_be_visible(timeout=60_000)
    expect(page.locator("#run-outcome")).to_have_attribute("data-status", "accepted", timeout=30_000)
    assert page.evaluate("window.loadedOnce") is True, "the steps arrived through the stream, not a reload"
    assert steps(page) == [("1", "ok"), ("2", "ok"), ("3", "pass"), ("4", "pass")]
    expect(page.locator("#run-header .total-steps")).to_have_text("4")
    # The stream goes on while the job delivers (push, PR, check run) and ends once the job is done.
    expect(page.locator("body")).to_have_attribute("data-finished", "true", timeout=30_000)
    expect(page.locator("#run-header")).to_contain_text("job status: done")
    page.screenshot(path=artifact("run-viewer-live.png"), full_page=True)
    page.close()


def test_the_finished_run_shows_steps_checks_diff_evidence_and_chart(world: World, job: dict, browser: Browser) -> None:
    job["release"].set()
    assert world.wait(job["id"])["status"] == "done"
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(job["link"])
    assert steps(page) == [("1", "ok"), ("2", "ok"), ("3", "pass"), ("4", "pass")]
    expect(page.locator("h1")).to_have_text("add() subtracts instead of adding")
    expect(page.locator("#run-contract")).to_contain_text("`add(2, 3)` returns 5")
    expect(page.locator("#run-plan")).to_contain_text("make add() return a + b")
    evidence = page.locator("#run-evidence tr[data-check='tests'] [data-status]")
    assert [evidence.nth(i).get_attribute("data-status") for i in range(2)] == ["fail", "pass"]
    step3 = page.locator("li.step[data-step='3']")
    assert (
        step3.locator(".action[data-tool='run_checks'] tr.check [data-status]").get_attribute("data-status") == "pass"
    )
    diff = step3.locator("details.checkpoint pre.diff")
    expect(diff).to_be_hidden()
    step3.locator("details.checkpoint summary").click()
    expect(diff).to_be_visible()
    expect(diff.locator(".d-add")).to_have_text("+    return a + b")
    expect(diff.locator(".d-del")).to_have_text("-    return a - b")
    assert page.locator("#run-chart svg circle.cost").count() == 4
    expect(page.locator("#run-outcome")).to_contain_text("all 1 contract checks pass")
    page.screenshot(path=artifact("run-viewer-finished.png"), full_page=True)
    page.close()


def test_the_pr_body_and_the_check_run_link_the_same_page(world: World, job: dict) -> None:
    job["release"].set()
    world.wait(job["id"])
    [pr] = [p for p in world.github.pulls_of(REPO) if find_marker(p["body"], PR_KIND) == 1]
    [in_body] = [m.group(1) for m in LINK.finditer(pr["body"])]
    [run] = [r for r in world.github.check_runs if r["head_sha"] == world.git("rev-parse", pr["head"]["ref"]).strip()]
    assert in_body == job["link"] == run["details_url"]
    assert job["link"] in run["output"]["summary"]
    assert world.github.violations == [], "every request matched GitHub's OpenAPI schema"


def store_identity(world: World) -> str:
    """The id of the job store `ai-fix serve` runs on, as signed links name it."""
    store = Store.from_url(f"sqlite:///{world.root / 'ai-fix.db'}")
    try:
        return store.identity()
    finally:
        store.close()


def test_a_wrong_or_expired_signature_is_refused(world: World, job: dict) -> None:
    link, job_id = job["link"], job["id"]
    exp, sig = re.search(r"exp=(\d+)&sig=(\w+)", link).groups()  # type: ignore[union-attr]
    key, store = SECRETS["AIFIX_VIEWER_SECRET"], store_identity(world)
    past = int(time.time()) - 60
    refused = {
        "tampered": f"/runs/{job_id}?exp={exp}&sig={sig[:-1]}{'0' if sig[-1] != '0' else '1'}",
        "another job": f"/runs/{job_id + 1}?exp={exp}&sig={sig}",
        "later expiry": f"/runs/{job_id}?exp={int(exp) + 1}&sig={sig}",
        "expired": f"/runs/{job_id}?exp={past}&sig={sign(key, store, job_id, past)}",
        "expired stream": f"/runs/{job_id}/events?exp={past}&sig={sign(key, store, job_id, past)}",
    }
    for what, path in refused.items():
        response = world.client.get(path)
        assert response.status_code == 403, what
    assert "expired" in world.client.get(refused["expired"]).text
    assert world.client.get(link.removeprefix(world.url)).status_code == 200
    anonymous = world.client.get(f"/runs/{job_id}")
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Basic")


def test_no_page_or_stream_carries_a_secret(world: World, job: dict) -> None:
    job["release"].set()
    world.wait(job["id"])
    path = job["link"].removeprefix(world.url)
    page = world.client.get(path).text
    with world.client.stream("GET", path.replace("?", "/events?", 1) + "&from=0") as stream:
        events = "".join(stream.iter_text())
    listing = world.client.get("/runs", headers=ADMIN).text
    assert "event: update" in events and "event: end" in events and "return a + b" in events
    assert "the key is [REDACTED]" in page, "the model's attempt to echo a secret is in the trace, redacted"
    assert secrets_in([page, events, listing], world.github) == []


def test_the_admin_token_opens_the_list_with_filters_and_every_run(world: World, job: dict, browser: Browser) -> None:
    job["release"].set()
    world.wait(job["id"])
    assert world.client.get("/runs").status_code == 401
    assert f'data-job="{job["id"]}"' in world.client.get("/runs", headers=ADMIN, params={"repo": REPO}).text
    assert f'data-job="{job["id"]}"' not in world.client.get("/runs", headers=ADMIN, params={"status": "queued"}).text
    assert world.client.get("/runs", headers=ADMIN, params={"status": "bogus"}).status_code == 400
    # A browser logs in with the token as the password (HTTP Basic), then follows the list to the page.
    context = browser.new_context(http_credentials={"username": "admin", "password": SECRETS["AIFIX_ADMIN_TOKEN"]})
    page = context.new_page()
    page.goto(f"{world.url}/runs?repo={REPO}&status=done")
    page.locator(f"tr.run[data-job='{job['id']}'] a").click()
    expect(page.locator("li.step")).to_have_count(4)
    context.close()
    assert httpx.get(f"{world.url}/runs/{job['id']}", headers=ADMIN).status_code == 200


def test_a_job_that_never_ran_the_loop_posts_no_link(world: World, job: dict) -> None:
    job["release"].set()
    world.wait(job["id"])
    world.github.add_issue(
        REPO, 2, title="Make it better", body="Please improve it.", author=SENDER, labels=("ai-fix",)
    )
    payload = labeled(2, sender=SENDER)
    payload["issue"].update(title="Make it better", body="Please improve it.")
    assert world.run("issues", payload)["status"] == "needs_clarification"
    [progress] = [c for c in world.github.bot_comments(REPO, 2) if find_marker(c["body"], PROGRESS_KIND) == 2]
    assert "Needs clarification" in progress["body"] and "/runs/" not in progress["body"]
