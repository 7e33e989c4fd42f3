"""What the harness does with the policy's verdict: keep a checkpoint, count a failure, roll back and narrow, hand off."""

from __future__ import annotations

import re

from bot.checks.models import CheckRun
from bot.contract.models import Scope
from bot.errors import PolicyViolation
from bot.loop.exits import HandedOff
from bot.loop.harness import Harness
from bot.loop.policy import failure_line, judge
from bot.loop.records import ActionRecord, Checkpoint
from bot.loop.state import RunState
from bot.markdown import first_line
from bot.workspace.gate import PatchGate

FRAME = re.compile(r"([\w./-]+\.[A-Za-z0-9]+):(\d+)")
"""`path:line` in a failure summary: where the failing area is."""
NO_PROGRESS = 3
"""The same tool call this many times in a row, or this many answers without a tool call, is a repeated failure."""


def steer(h: Harness, state: RunState, run: CheckRun, action: ActionRecord) -> str:
    """Apply the verdict on the checks `action` ran; the note (if any) is appended to what the model reads."""
    j = judge(
        run,
        action.expectation,
        good=state.good,
        failures=state.failures,
        max_retries=h.contract.budget.max_retries_same_failure,
        narrowed=state.narrowed,
    )
    if j.verdict == "keep":
        return keep_progress(h, state, run, action)
    if not j.key:
        return ""
    return count_failure(h, state, j.key, failure_line(run), run)


def count_failure(h: Harness, state: RunState, key: str, why: str, run: CheckRun | None = None) -> str:
    """One more time this failure came back: at the budget's limit, roll back and narrow (or hand off)."""
    state.failures[key] = attempt = state.failures.get(key, 0) + 1
    state.conclusions.append(f"step {state.steps}: still failing ({key}), attempt {attempt}")
    if attempt < h.contract.budget.max_retries_same_failure:
        return ""
    return roll_back_and_narrow(h, state, key, first_line(why) or key, run)


def no_progress(h: Harness, state: RunState, what: str) -> str:
    """The model repeats itself without moving: a repeated failure at once (roll back and narrow, then hand off)."""
    state.repeats = state.silent = 0
    state.last_call = ""
    state.conclusions.append(f"step {state.steps}: no progress: {what}")
    return roll_back_and_narrow(h, state, f"no progress: {what}", what, state.latest, headline=f"no progress ({what})")


def keep_progress(h: Harness, state: RunState, run: CheckRun, action: ActionRecord) -> str:
    message = f"ai-fix step {state.steps}: " + "; ".join(state.attempt_edits or ["checks pass"])
    try:
        sha = h.workspace.checkpoint(message, gate=state.gate)
    except PolicyViolation as exc:
        return f"\nnot kept as a checkpoint: {exc}"
    if sha:
        action.checkpoint = Checkpoint.of(sha, h.workspace.commit_diff(sha))
    state.good.update({r.name: r.status for r in run.results})
    state.done += state.attempt_edits
    passing = ", ".join(r.name for r in run.results if r.status == "pass")
    state.conclusions.append(f"step {state.steps}: checks improved ({passing} pass); checkpoint {(sha or '')[:10]}")
    state.attempt_edits, state.failures = [], {}
    return "\nprogress kept as a checkpoint"


def roll_back_and_narrow(
    h: Harness,
    state: RunState,
    key: str,
    why: str,
    run: CheckRun | None,
    *,
    headline: str = "the same failure repeated",
) -> str:
    """The same failure came back: rule the approach out, keep it on the attempts branch, then roll back and
    narrow, or hand off if already narrowed."""
    approach = "; ".join(state.attempt_edits) or "re-running the checks without a new change"
    state.ruled_out.append(f"{approach} — still fails: {why}")
    h.workspace.keep_attempt(f"ai-fix attempt (rolled back): {approach}\n\nStill fails: {why}\n")
    state.attempt_edits, state.failures = [], {}
    if state.narrowed:
        raise HandedOff(
            f"the same failure ({key}) came back after rolling back and narrowing the scope ({state.scope_note})"
        )
    h.workspace.rollback()
    state.change.forget()
    state.latest = None
    area = failing_area(h, state, run) if run else []
    if area:
        state.gate = PatchGate.over(h.workspace, Scope(allow=area, deny=h.contract.scope.deny), h.contract.budget)
        state.scope_note = "narrowed to the failing area: " + ", ".join(area)
    state.narrowed = True
    state.conclusions.append(f"step {state.steps}: rolled back to the last good checkpoint ({key}); {state.scope_note}")
    h.reporter.say(f"policy: rolled back; {state.scope_note}")
    return (
        f"\n{headline}: the workspace was rolled back to the last good checkpoint and the scope is now "
        f"{state.scope_note}"
    )


def failing_area(h: Harness, state: RunState, run: CheckRun) -> list[str]:
    """Files the failure points at (failing tests, traceback frames) and the plan's impact, within the scope."""
    failed = run.failing()
    candidates = [t.file for r in failed for t in r.tests if t.file and t.status != "pass"]
    candidates += [m.group(1) for r in failed for m in FRAME.finditer(r.summary + "\n" + r.output)]
    candidates += state.plan.impact if state.plan else []
    root = h.workspace.path
    area: list[str] = []
    for path in candidates:
        path = path.removeprefix("./")
        if path not in area and (root / path).is_file() and state.gate.check_path(path).allowed:
            area.append(path)
    return area
