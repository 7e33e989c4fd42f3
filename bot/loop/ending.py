"""The ending: the work is kept (or dropped by the gate), the checks run once more, the RunResult is assembled."""

from __future__ import annotations

import contextlib

from bot.contract.approach import EstimateCheck
from bot.evidence.failures import new_failures
from bot.evidence.models import Evidence
from bot.loop.accounting import run_cost
from bot.loop.budget import time_left
from bot.loop.exits import RunEnded
from bot.loop.harness import Harness
from bot.loop.records import Checkpoint, EndRecord
from bot.loop.result import Handoff, RunResult
from bot.loop.state import RunState
from bot.markdown import first_line
from bot.redact import redact
from bot.vocabulary import ACCEPTED, FAILED, UNVERIFIED


def save_work(h: Harness, state: RunState) -> str:
    """Commit what is left so the branch holds it; what the gate refuses goes to the attempts ref instead."""
    return h.workspace.save_work(
        f"ai-fix: work in progress at step {state.meter.steps} (not verified)", gate=state.gate
    )


def kept_since(h: Harness, state: RunState, before: str) -> Checkpoint | None:
    """The commit the ending made, if it made one."""
    head, dropped = h.workspace.head_sha, state.gate.take_discarded()
    return Checkpoint.of(head, h.workspace.commit_diff(head), dropped) if head != before else None


def conclude(h: Harness, state: RunState, end: RunEnded) -> RunResult:
    before = h.workspace.head_sha
    notes = keep_work(h, state, end)
    result = assemble(h, state, end, notes)
    h.trace.append(
        EndRecord(
            outcome=result.outcome,
            reason=result.reason,
            steps=result.steps,
            head_sha=result.head_sha,
            final=state.finish.final,
            checkpoint=kept_since(h, state, before),
            diff=result.diff,
            handoff=result.handoff,
            summary=result.model_summary,
            risks=result.risks,
            cost=result.cost,
            estimate=estimate_check(h, state),
        )
    )
    h.reporter.say(f"outcome: {result.outcome} — {result.reason}")
    return result


def keep_work(h: Harness, state: RunState, end: RunEnded) -> list[str]:
    """Commit what the run leaves: the accepted (or unverified) change, else the work so far with the final checks
    run on it; what could not be kept, in notes for the handoff."""
    ws, notes = h.workspace, []
    if end.outcome in (ACCEPTED, UNVERIFIED):
        suffix = "" if end.outcome == ACCEPTED else " (checks pass; not every criterion shown)"
        ws.checkpoint(f"ai-fix: {h.contract.title}{suffix}", gate=state.gate)
    elif state.checks.environment_ok:
        if note := save_work(h, state):
            notes.append(note)
        stats = ws.stats()
        if stats.files:
            h.reporter.phase("final_checks")
            changed = [f.path for f in stats.files]
            state.finish.checked(
                h.checks.run(None, commit=ws.head_sha, changed_files=changed, limit_s=time_left(h, state, ending=True))
            )
            ws.put_back_unwritten(state.gate)
    return notes


def assemble(h: Harness, state: RunState, end: RunEnded, notes: list[str]) -> RunResult:
    """The RunResult the PR body, the check run and evidence.json are rendered from."""
    ws = h.workspace
    evidence = state.finish.evidence or Evidence.not_taken(
        h.contract.acceptance_criteria, "the run ended before a verified finish"
    )
    final, base = state.finish.final, state.checks.evidence_base_run or state.checks.baseline
    # What already failed on the base commit is a known risk of an accepted change, not work left undone.
    failed = (new_failures(base, final) if end.outcome == ACCEPTED else final.failing()) if final else []
    not_done = [f"{r.name} is {r.status}: {first_line(r.summary or r.reason or r.output)}" for r in failed]
    return RunResult(
        outcome=end.outcome,
        reason=end.reason,
        contract=h.contract,
        branch=ws.branch,
        base_sha=ws.base_sha,
        head_sha=ws.head_sha,
        setup=state.checks.setup,
        baseline=state.checks.baseline,
        final=state.finish.final,
        diff=ws.stats(),
        diff_text=redact(ws.diff(), h.secrets),
        plan=state.plan,
        model_summary=state.finish.summary,
        risks=state.finish.risks,
        handoff=Handoff(
            done=state.notes.done + state.notes.attempt_edits,
            not_done=not_done + notes + [f"not verified: {c.text} ({c.note})" for c in evidence.unverified()],
            ruled_out=state.notes.ruled_out,
            question=end.question,
            next_steps=end.next_steps,
            tried=state.notes.tried,
            attempts_ref=ws.attempts_ref if ws.has_attempts else "",
        ),
        evidence=evidence,
        cost=run_cost(h, state),
        steps=state.meter.steps,
    )


def estimate_check(h: Harness, state: RunState) -> EstimateCheck | None:
    """The approved plan's estimate against what the run used, for the trace."""
    approved = h.contract.approach
    if approved is None or approved.estimate is None:
        return None
    u = state.meter.usage
    return EstimateCheck.of(
        approved.estimate,
        steps=state.meter.steps,
        prompt=u.prompt_tokens,
        cached=u.cache_read_tokens,
        output=u.output_tokens,
        usd=run_cost(h, state).usd,
    )


def interrupted(h: Harness, state: RunState, exc: BaseException) -> None:
    """A crash or an interruption (Ctrl-C, /agent stop) still leaves the edits on the branch and the end in the trace."""
    with contextlib.suppress(Exception):
        before = h.workspace.head_sha
        if state.checks.environment_ok:
            save_work(h, state)
        reason = f"interrupted: {type(exc).__name__}: {exc}"
        h.trace.append(
            EndRecord(
                outcome=FAILED,
                reason=reason,
                steps=state.meter.steps,
                head_sha=h.workspace.head_sha,
                checkpoint=kept_since(h, state, before),
            )
        )
