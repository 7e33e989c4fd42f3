"""What the harness does with the policy's verdict: keep a checkpoint, count a failure, roll back and narrow, hand off."""

from __future__ import annotations

import re

from bot.checks.models import CheckRun
from bot.contract.models import Scope
from bot.envdir import DEPENDENCY_DIRS
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
        good=state.checks.good,
        failures=state.stalls.failures,
        max_retries=h.contract.budget.max_retries_same_failure,
        narrowed=state.stalls.narrowed,
    )
    if j.verdict == "keep":
        return keep_progress(h, state, run, action)
    if not j.key:
        return ""
    return count_failure(h, state, j.key, failure_line(run), run)


def count_failure(h: Harness, state: RunState, key: str, why: str, run: CheckRun | None = None) -> str:
    """One more time this failure came back: at the budget's limit, roll back and narrow (or hand off)."""
    attempt = state.stalls.failed(key)
    state.notes.conclude(f"step {state.meter.steps}: still failing ({key}), attempt {attempt}")
    if attempt < h.contract.budget.max_retries_same_failure:
        return ""
    return roll_back_and_narrow(h, state, key, first_line(why) or key, run)


def no_progress(h: Harness, state: RunState, what: str) -> str:
    """The model repeats itself without moving: a repeated failure at once (roll back and narrow, then hand off)."""
    state.stalls.reset()
    state.notes.conclude(f"step {state.meter.steps}: no progress: {what}")
    return roll_back_and_narrow(
        h, state, f"no progress: {what}", what, state.checks.latest, headline=f"no progress ({what})"
    )


def keep_progress(h: Harness, state: RunState, run: CheckRun, action: ActionRecord) -> str:
    message = f"ai-fix step {state.meter.steps}: " + "; ".join(state.notes.attempt_edits or ["checks pass"])
    try:
        sha = h.workspace.checkpoint(message, gate=state.gate)
    except PolicyViolation as exc:
        return f"\nnot kept as a checkpoint: {exc}"
    finally:
        state.change.forget()
        dropped = state.gate.take_discarded()
    if dropped:
        h.reporter.say(f"checkpoint: not committed, written by the checks: {', '.join(dropped)}")
    if sha:
        action.checkpoint = Checkpoint.of(sha, h.workspace.commit_diff(sha), dropped)
    state.checks.kept(run)
    state.notes.kept()
    state.stalls.forget_failures()
    passing = ", ".join(r.name for r in run.results if r.status == "pass")
    state.notes.conclude(f"step {state.meter.steps}: checks improved ({passing} pass); checkpoint {(sha or '')[:10]}")
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
    """The same failure came back: rule the approach out, keep it on the attempts ref, then roll back and
    narrow, or hand off if already narrowed."""
    approach = "; ".join(state.notes.attempt_edits) or "re-running the checks without a new change"
    state.notes.rule_out(approach, why)
    state.stalls.forget_failures()
    h.workspace.keep_attempt(f"ai-fix attempt (rolled back): {approach}\n\nStill fails: {why}\n")
    if state.stalls.narrowed:
        raise HandedOff(
            f"the same failure ({key}) came back after rolling back and narrowing the scope ({state.scope_note})"
        )
    h.workspace.rollback()
    state.gate.written.clear()  # those writes were rolled back
    state.change.forget()
    state.checks.rolled_back()
    area = failing_area(h, state, run) if run else []
    gate = (
        PatchGate.over(h.workspace, Scope(allow=area, deny=h.contract.scope.deny), h.contract.budget) if area else None
    )
    state.narrowed(gate, "narrowed to the failing area: " + ", ".join(area))
    state.stalls.narrow()
    state.notes.conclude(
        f"step {state.meter.steps}: rolled back to the last good checkpoint ({key}); {state.scope_note}"
    )
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
        if installed(path) or path in area or not (root / path).is_file() or not state.gate.check_path(path).allowed:
            continue
        area.append(path)
    return area


def installed(path: str) -> bool:
    """A file of the environment (the job's `.ai-fix-env/`, `node_modules`, any site-packages), not the project's:
    a traceback frame there never narrows the scope to it."""
    parts = path.split("/")
    return bool(DEPENDENCY_DIRS & set(parts)) or bool({"site-packages", "dist-packages"} & set(parts))
