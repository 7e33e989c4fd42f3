"""The project's CI on one commit, from GitHub's answers: runs once each, ai-fix's own check left out."""

from __future__ import annotations

from bot.ci.read import head_ci

HEAD = "a" * 40


def run(run_id: int, conclusion: str | None, *, status: str = "completed", suite: int = 1) -> dict[str, object]:
    return {"id": run_id, "name": f"wf{run_id}", "head_sha": HEAD, "status": status, "conclusion": conclusion,
            "run_attempt": 1, "check_suite_id": suite}  # fmt: skip


def check(name: str, conclusion: str | None, *, suite: int = 99, app: int = 5) -> dict[str, object]:
    status = "completed" if conclusion else "in_progress"
    return {"id": hash(name) % 1000, "name": name, "status": status, "conclusion": conclusion,
            "check_suite": {"id": suite}, "app": {"id": app}}  # fmt: skip


def test_workflow_runs_check_runs_and_statuses_each_count_once() -> None:
    ci = head_ci(
        HEAD,
        [run(1, "failure", suite=10), run(2, None, status="in_progress", suite=20), run(3, "success", suite=30)],
        [check("build", "failure", suite=10), check("ai-fix", "failure", app=42), check("codecov", "timed_out")],
        {"statuses": [{"context": "ci/jenkins", "state": "error"}, {"context": "docs", "state": "pending"}]},
        app_id=42,
        required=None,
    )
    assert [(f.source, f.name, f.conclusion) for f in ci.failed] == [
        ("workflow_run", "wf1", "failure"),
        ("check_run", "codecov", "timed_out"),
        ("status", "ci/jenkins", "error"),
    ], "the job of a run counts as the run; ai-fix's own check never"
    assert ci.pending == ["wf2", "docs"] and ci.passed == ["wf3"]
    assert all(f.required for f in ci.failed), "no protection: every check is required"


def test_required_checks_come_from_the_branch_protection() -> None:
    ci = head_ci(HEAD, [run(1, "failure", suite=10)], [check("build", "failure", suite=10), check("lint", "failure")],
                 {}, app_id=None, required=["build"])  # fmt: skip
    assert [(f.name, f.required) for f in ci.failed] == [("wf1", True), ("lint", False)]
    assert [f.name for f in ci.required_failing] == ["wf1"]
