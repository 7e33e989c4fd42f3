"""The project's CI on one commit, from what GitHub's API answered: workflow runs, check runs, commit statuses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.ci.models import FAILING, FailedCheck, HeadCi, WorkflowRun

OWN_CHECK = "ai-fix"
"""The name of ai-fix's own check run: never a failure to fix (it reports on the round, not the project)."""
FAILING_STATUSES = frozenset({"failure", "error"})


def _is_own(check_run: dict[str, Any], app_id: int | None) -> bool:
    app = check_run.get("app") or {}
    return (app_id is not None and app.get("id") == app_id) or check_run.get("name") == OWN_CHECK


def _output(check_run: dict[str, Any]) -> str:
    output = check_run.get("output") or {}
    return "\n".join(str(output[k]) for k in ("title", "summary") if output.get(k))


def head_ci(
    head_sha: str,
    runs: Sequence[dict[str, Any]],
    check_runs: Sequence[dict[str, Any]],
    status: dict[str, Any],
    *,
    app_id: int | None,
    required: Sequence[str] | None,
) -> HeadCi:
    """Every check on `head_sha` but ai-fix's own, failing, pending or passed.

    A GitHub Actions workflow run counts once, as a run (which can be re-run), not again through the
    check runs of its jobs; those only say whether the branch's protection requires it.
    """
    ci = HeadCi(head_sha=head_sha)
    wanted = set(required or ())
    suites: dict[int, list[dict[str, Any]]] = {}
    for check in check_runs:
        suite = (check.get("check_suite") or {}).get("id")
        if isinstance(suite, int):
            suites.setdefault(suite, []).append(check)
    in_runs: set[int] = set()
    for run in runs:
        if run.get("head_sha", head_sha) != head_sha:
            continue
        suite_id = run.get("check_suite_id")
        if isinstance(suite_id, int):
            in_runs.add(suite_id)
        jobs = suites.get(suite_id, []) if isinstance(suite_id, int) else []
        _read_run(ci, run, required is None or any(j.get("name") in wanted for j in jobs))
    for check in check_runs:
        if not _is_own(check, app_id) and (check.get("check_suite") or {}).get("id") not in in_runs:
            _read_check_run(ci, check, required is None or check.get("name") in wanted)
    for st in status.get("statuses") or []:
        _read_status(ci, st, required is None or st.get("context") in wanted)
    return ci


def _read_run(ci: HeadCi, run: dict[str, Any], needed: bool) -> None:
    """A GitHub Actions workflow run (its jobs' check runs not counted again); `needed`: protection requires it."""
    name = str(run.get("name") or (run.get("workflow") or {}).get("name") or f"workflow run {run.get('id')}")
    wf = WorkflowRun(
        id=int(run["id"]),
        name=name,
        status=str(run.get("status") or ""),
        conclusion=run.get("conclusion"),
        attempt=int(run.get("run_attempt") or 1),
    )
    ci.runs.append(wf)
    if wf.status != "completed":
        ci.pending.append(name)
    elif wf.conclusion in FAILING:
        url = str(run.get("html_url") or "")
        ci.failed.append(
            FailedCheck(
                source="workflow_run",
                name=name,
                conclusion=str(wf.conclusion),
                run_id=wf.id,
                attempt=wf.attempt,
                url=url,
                required=needed,
            )
        )
    elif wf.conclusion == "success":
        ci.passed.append(name)


def _read_check_run(ci: HeadCi, check: dict[str, Any], needed: bool) -> None:
    """A check run of another App (or of a workflow's job not counted through its run)."""
    name = str(check.get("name") or "")
    if check.get("status") != "completed":
        ci.pending.append(name)
    elif check.get("conclusion") in FAILING:
        ci.failed.append(
            FailedCheck(
                source="check_run",
                name=name,
                conclusion=str(check["conclusion"]),
                check_run_id=check.get("id"),
                url=str(check.get("html_url") or check.get("details_url") or ""),
                summary=_output(check),
                required=needed,
            )
        )
    elif check.get("conclusion") == "success":
        ci.passed.append(name)


def _read_status(ci: HeadCi, st: dict[str, Any], needed: bool) -> None:
    """A commit status (the older API some CI services still post to)."""
    context, state = str(st.get("context") or ""), st.get("state")
    if state in FAILING_STATUSES:
        ci.failed.append(
            FailedCheck(
                source="status",
                name=context,
                conclusion=str(state),
                url=str(st.get("target_url") or ""),
                summary=str(st.get("description") or ""),
                required=needed,
            )
        )
    elif state == "pending":
        ci.pending.append(context)
    elif state == "success":
        ci.passed.append(context)
