"""The trigger rules as pure functions over recorded payloads (no HTTP, no signing)."""

import json

import pytest

from bot.intake.events import Event, MalformedDelivery, parse_event
from bot.intake.triggers import Ignored, InstallationChange, LabelRemoved, Ping, Triggered, decide
from tests.support.fake_github import load_payload
from tests.support.webhooks import labeled, pr_comment, review_comment, review_submitted, unlabeled

BOT = "ai-fix[bot]"


def run(name: str, payload: dict) -> object:
    return decide(Event(name=name, delivery_id="d-1", payload=payload), trigger_label="ai-fix", bot_login=BOT)


def test_labeled_with_the_trigger_label_is_an_issue_trigger():
    decision = run("issues", labeled(7))
    assert isinstance(decision, Triggered)
    t = decision.trigger
    assert (t.kind, t.repo, t.number, t.installation_id, t.sender) == (
        "issue",
        "Codertocat/Hello-World",
        7,
        1,
        "Codertocat",
    )
    assert t.clone_url == "https://github.com/Codertocat/Hello-World.git" and t.default_branch == "master"
    assert t.delivery_id == "d-1"


def test_an_issue_trigger_carries_the_issue_as_labelled():
    payload = labeled(7)
    payload["issue"].update(title="Crash on empty input", body="Steps:\r\n1. run it")
    issue = run("issues", payload).trigger.issue
    assert (issue.title, issue.body, issue.labels, issue.author) == (
        "Crash on empty input",
        "Steps:\r\n1. run it",
        ["ai-fix", "bug"],
        "Codertocat",
    )
    assert issue.at == payload["issue"]["updated_at"]


def test_removing_the_trigger_label_is_a_label_removal_unless_ai_fix_removed_it():
    decision = run("issues", unlabeled(7))
    assert isinstance(decision, LabelRemoved)
    assert (decision.repo, decision.number, decision.installation_id, decision.sender) == (
        "Codertocat/Hello-World",
        7,
        1,
        "Codertocat",
    )
    assert decision.reason == "the ai-fix label was removed by @Codertocat"
    assert (
        "ai-fix removed the label itself" in run("issues", unlabeled(7, sender="ai-fix[bot]", sender_type="Bot")).reason
    )
    assert "not the trigger label" in run("issues", unlabeled(7, label="bug")).reason


def _set(payload: dict, key: str, field: str, value: object) -> dict:
    payload[key][field] = value
    return payload


@pytest.mark.parametrize(
    ("name", "payload", "field"),
    [
        ("issues", _set(labeled(), "issue", "number", 2**63), "number"),
        ("issues", _set(labeled(), "issue", "number", 0), "number"),
        ("issues", _set(labeled(), "installation", "id", 2**64 - 1), "installation_id"),
        ("issues", _set(labeled(), "repository", "full_name", "Codertocat/Hello-World\nx"), "repo"),
        ("issues", _set(labeled(), "sender", "login", "Codertocat\u0000"), "sender"),
        ("issues", _set(labeled(), "issue", "title", ["not", "text"]), "title"),
        ("issues", _set(unlabeled(), "issue", "number", 2**63), "number"),
        ("issues", _set(unlabeled(), "installation", "id", 2**64 - 1), "installation_id"),
        ("issue_comment", _set(pr_comment("/agent stop"), "comment", "id", 2**63), "comment_id"),
        ("issues", _set(labeled(), "label", "name", ["ai-fix"]), "label.name"),
        ("issues", _set(unlabeled(), "label", "name", {"name": "ai-fix"}), "label.name"),
        ("issue_comment", _set(pr_comment("/agent stop"), "comment", "body", ["/agent stop"]), "comment.body"),
        (
            "installation",
            _set(load_payload("installation/created"), "installation", "id", 2**64 - 1),
            "installation_id",
        ),
    ],
)
def test_values_no_github_object_has_are_recorded_as_unusable(name, payload, field):
    decision = run(name, payload)
    assert isinstance(decision, Ignored) and f"payload is unusable: {field}:" in decision.reason, decision


def test_the_label_compares_case_insensitively_like_github():
    assert isinstance(run("issues", labeled(label="AI-Fix")), Triggered)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (labeled(label="bug"), "not the trigger label"),
        (labeled(sender="dependabot[bot]", sender_type="Bot"), "bots never trigger"),
        (labeled(sender="ai-fix[bot]", sender_type="Bot"), "bots never trigger"),
        (labeled(installation=None), "no installation id"),
    ],
)
def test_labeled_refusals(payload, reason):
    decision = run("issues", payload)
    assert isinstance(decision, Ignored) and reason in decision.reason


def test_a_closed_issue_and_other_issue_actions_are_not_triggers():
    closed = labeled()
    closed["issue"]["state"] = "closed"
    assert "closed" in run("issues", closed).reason
    opened = load_payload("issues/opened")
    assert isinstance(run("issues", opened), Ignored)


def test_retry_on_an_ai_fix_pr_carries_its_feedback():
    decision = run("issue_comment", pr_comment("/agent retry\nKeep the public API unchanged."))
    assert isinstance(decision, Triggered)
    t = decision.trigger
    assert (t.kind, t.number, t.feedback) == ("retry", 2, "Keep the public API unchanged.")
    assert t.comment_id == load_payload("issue_comment/created")["comment"]["id"]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (pr_comment("/agent retry", pr_author_type="User"), "only on a pull request opened by ai-fix"),
        (pr_comment("/agent retry", pr_body="Fixes #1 (no marker)"), "only on a pull request opened by ai-fix"),
        (pr_comment("/agent retry", on_pr=False), "only on a pull request opened by ai-fix"),
        (pr_comment("```\n/agent retry\n```"), "no /agent command"),
        (pr_comment("> /agent retry\n\nquoting the docs"), "no /agent command"),
        (pr_comment("/agent retry", sender="ai-fix[bot]", sender_type="Bot"), "bots never trigger"),
        (pr_comment("Looks good to me"), "no /agent command"),
    ],
)
def test_retry_refusals(payload, reason):
    decision = run("issue_comment", payload)
    assert isinstance(decision, Ignored) and reason in decision.reason


def test_a_pr_by_another_bot_with_our_marker_is_not_ours():
    renovate = pr_comment("/agent retry")
    renovate["issue"]["user"]["login"] = "renovate[bot]"
    assert "only on a pull request opened by ai-fix" in run("issue_comment", renovate).reason
    review = review_submitted()
    review["pull_request"]["user"]["login"] = "renovate[bot]"
    assert "not opened by ai-fix" in run("pull_request_review", review).reason
    comment = review_comment()
    comment["pull_request"]["user"]["login"] = "renovate[bot]"
    assert "not opened by ai-fix" in run("pull_request_review_comment", comment).reason
    # Our own bot user, whatever the case GitHub spells it in.
    ours = pr_comment("/agent retry")
    ours["issue"]["user"]["login"] = "AI-Fix[bot]"
    assert isinstance(run("issue_comment", ours), Triggered)


@pytest.mark.parametrize("name", ["stop", "help"])
def test_stop_and_help_work_on_issues_and_prs(name):
    for payload in (pr_comment(f"/agent {name}"), pr_comment(f"/agent {name}", on_pr=False, pr_author_type="User")):
        decision = run("issue_comment", payload)
        assert isinstance(decision, Triggered) and decision.trigger.kind == name and decision.trigger.number == 2


def test_edited_comments_do_not_trigger():
    payload = pr_comment("/agent retry")
    payload["action"] = "edited"
    assert isinstance(run("issue_comment", payload), Ignored)


@pytest.mark.parametrize(
    ("state", "body", "triggers"),
    [
        ("changes_requested", "", True),
        ("changes_requested", "Please handle None.", True),
        ("commented", "Please rename this.", True),
        ("commented", "", False),
        ("commented", None, False),
        ("approved", "LGTM", False),
    ],
)
def test_submitted_reviews(state, body, triggers):
    decision = run("pull_request_review", review_submitted(state, body))
    assert isinstance(decision, Triggered) is triggers
    if triggers:
        t = decision.trigger
        assert (t.kind, t.number, t.review_id, t.feedback) == ("review", 2, 237895671, body)


def test_review_on_someone_elses_pr_is_ignored():
    payload = review_submitted()
    payload["pull_request"]["user"]["type"] = "User"
    assert "not opened by ai-fix" in run("pull_request_review", payload).reason


def test_a_review_on_our_bots_pr_from_a_fork_is_ignored():
    for payload, event in (
        (review_submitted(), "pull_request_review"),
        (review_comment(), "pull_request_review_comment"),
    ):
        payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
        assert "from a branch of this repository" in run(event, payload).reason


def test_review_comment_is_a_review_trigger_keyed_by_its_review():
    decision = run("pull_request_review_comment", review_comment(review_id=55, comment_id=66))
    assert isinstance(decision, Triggered)
    assert (decision.trigger.kind, decision.trigger.review_id, decision.trigger.comment_id) == ("review", 55, 66)


def test_installation_events():
    created = run("installation", load_payload("installation/created"))
    assert isinstance(created, InstallationChange) and created.action == "created" and not created.stops_work
    assert created.repos_added == ["Codertocat/Hello-World"]
    for name in ("installation/deleted", "installation/suspend"):
        decision = run("installation", load_payload(name))
        assert isinstance(decision, InstallationChange) and decision.stops_work
    removed = run("installation_repositories", load_payload("installation_repositories/removed"))
    assert removed.repos_removed == ["octocat/Hello-World"]


def test_an_installation_on_repositories_is_a_labels_chore_for_each():
    created = run("installation", load_payload("installation/created"))
    [chore] = created.label_chores()
    assert (chore.kind, chore.repo, chore.number, chore.installation_id) == (
        "labels",
        "Codertocat/Hello-World",
        186853002,
        957387,
    )
    assert (chore.origin, chore.sender, chore.delivery_id) == ("github", "Codertocat", created.delivery_id)
    added = run("installation_repositories", load_payload("installation_repositories/added"))
    assert [(c.repo, c.number) for c in added.label_chores()] == [("Codertocat/Space", 186853007)]
    for name in ("installation/deleted", "installation/suspend"):
        assert run("installation", load_payload(name)).label_chores() == []
    assert run("installation_repositories", load_payload("installation_repositories/removed")).label_chores() == []


def test_ping_and_unknown_events():
    assert isinstance(run("ping", load_payload("ping/event")), Ping)
    watch = run("watch", load_payload("push/event"))
    assert isinstance(watch, Ignored) and "'watch' is not handled" in watch.reason


def test_parse_event_needs_headers_and_a_json_object():
    headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "abc"}
    assert parse_event(headers, json.dumps({"zen": "x"}).encode()).payload == {"zen": "x"}
    for bad_headers, body in (
        ({"X-GitHub-Delivery": "abc"}, b"{}"),
        ({"X-GitHub-Event": "ping"}, b"{}"),
        (headers, b"{not json"),
        (headers, b"[1, 2]"),
        (headers, b"\xff\xfe"),
    ):
        with pytest.raises(MalformedDelivery):
            parse_event(bad_headers, body)


def test_a_trigger_without_a_usable_number_is_recorded_not_run():
    for bad in ("12", None):
        payload = labeled()
        payload["issue"]["number"] = bad
        decision = run("issues", payload)
        assert isinstance(decision, Ignored) and "payload is unusable: number" in decision.reason
    comment = pr_comment("/agent retry")
    comment["comment"]["id"] = "not-an-id"
    assert "comment_id" in run("issue_comment", comment).reason


def test_the_plan_label_starts_an_issue_job_too():
    decision = run("issues", labeled(7, label="ai-fix:plan"))
    assert isinstance(decision, Triggered) and decision.trigger.kind == "issue" and decision.trigger.plan is False
    assert "'ai-fix:plan'" in run("issues", labeled(7, label="ai-fix:later")).reason


def test_plan_approve_and_revise_on_an_issue():
    plan = run("issue_comment", pr_comment("/agent plan", number=9, on_pr=False))
    assert isinstance(plan, Triggered) and (plan.trigger.kind, plan.trigger.plan, plan.trigger.number) == (
        "issue",
        True,
        9,
    )
    approve = run("issue_comment", pr_comment("/agent approve 2", number=9, on_pr=False))
    assert isinstance(approve, Triggered) and (approve.trigger.kind, approve.trigger.approach) == ("approve", 2)
    assert approve.trigger.comment_id is not None
    revise = run("issue_comment", pr_comment("/agent revise\nuse a dict", number=9, on_pr=False))
    assert isinstance(revise, Triggered) and (revise.trigger.kind, revise.trigger.feedback) == ("revise", "use a dict")


@pytest.mark.parametrize("text", ["/agent plan", "/agent approve", "/agent revise smaller"])
def test_plan_commands_on_a_pull_request_are_ignored(text):
    decision = run("issue_comment", pr_comment(text))
    assert isinstance(decision, Ignored) and "works on issues" in decision.reason
