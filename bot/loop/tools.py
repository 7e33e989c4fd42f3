"""The model's tools: each call is validated, checked against the policy, run, and observed.

The tool names and input schemas are the model's API (`prompts/tools.json`, `records.TOOL_INPUTS`).
A malformed or refused call comes back as an error result the model reads; it never raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ValidationError

from bot.checks.models import CheckRun
from bot.evidence.failures import new_failures
from bot.evidence.models import Evidence
from bot.loop.budget import time_left
from bot.loop.editor import edit
from bot.loop.exits import Accepted, HandedOff, RunEnded, Unverified
from bot.loop.harness import Harness
from bot.loop.policy import expectation_met
from bot.loop.records import (
    TOOL_INPUTS,
    ActionRecord,
    AskHumanInput,
    EditInput,
    EvidenceRecord,
    FinishInput,
    Observation,
    PlanInput,
    RunChecksInput,
    SearchInput,
    StepRecord,
)
from bot.loop.result import Plan
from bot.loop.search import search_code
from bot.loop.state import RunState
from bot.loop.steering import NO_PROGRESS, count_failure, no_progress, steer
from bot.loop.verify import evidence_base_run, missing_evidence, take_evidence
from bot.markdown import first_line
from bot.model.base import ToolCall

NO_CALL = "your answer had no tool call; answer with one of the tools"


def observe(state: RunState, record: StepRecord, action: ActionRecord) -> None:
    record.actions.append(action)
    result = "ok" if action.observation.ok else "error"
    state.notes.result(f"[{action.tool or 'answer'}] {result}: {action.observation.text}")


def rejected(
    state: RunState, record: StepRecord, call: ToolCall, decision: Literal["refused", "malformed"], text: str
) -> None:
    observation = Observation(ok=False, text=text)
    observe(state, record, ActionRecord(tool=call.name, input=call.input, decision=decision, observation=observation))


def no_call_action() -> ActionRecord:
    """What an answer without a tool call is recorded as: malformed, and the model is told to call a tool."""
    return ActionRecord(tool="", decision="malformed", observation=Observation(ok=False, text=NO_CALL))


def no_tool_call(h: Harness, state: RunState, record: StepRecord) -> None:
    """An answer without a tool call: told so; the third in a row is a repeated failure."""
    observe(state, record, no_call_action())
    if state.stalls.no_call() >= NO_PROGRESS:
        state.notes.result(stalled(h, state, f"{NO_PROGRESS} answers in a row without a tool call", record).strip())


def execute(h: Harness, state: RunState, call: ToolCall, intent: str, record: StepRecord) -> None:
    """Run one tool call; every way it ends is observed, a RunEnded raised by `finish` or `ask_human` goes on."""
    if state.stalls.called(f"{call.name} {json.dumps(call.input, sort_keys=True)}") >= NO_PROGRESS:
        note = stalled(h, state, f"the same {call.name} call {NO_PROGRESS} times in a row", record)
        return rejected(state, record, call, "refused", f"not run again: {note.strip()}")
    args = parse(call, TOOL_INPUTS)
    if isinstance(args, str):
        return rejected(state, record, call, "malformed", args)
    if state.plan is None and not isinstance(args, PlanInput | AskHumanInput):
        text = "no plan yet: call `plan` first (steps with done_when, and the files you expect to change)"
        return rejected(state, record, call, "refused", text)
    action = ActionRecord(
        tool=call.name, input=call.input, decision="executed", observation=Observation(ok=True, text="")
    )
    try:
        action.observation = run_tool(h, state, args, intent, action, record)
    except RunEnded as end:
        if not action.observation.text:
            action.observation = Observation(ok=True, text=f"the run ends: {end.reason}")
        raise
    finally:
        if not action.observation.ok and action.decision == "executed":
            action.decision = "refused"
        observe(state, record, action)


def run_tool(
    h: Harness, state: RunState, args: BaseModel, intent: str, action: ActionRecord, record: StepRecord
) -> Observation:
    """What the tool `args` are for says; `finish` and `ask_human` may end the run (RunEnded)."""
    if isinstance(args, PlanInput):
        return do_plan(h, state, args)
    if isinstance(args, EditInput):
        return do_edit(h, state, args, intent)
    if isinstance(args, SearchInput):
        return do_search(h, args)
    if isinstance(args, RunChecksInput):
        return do_run_checks(h, state, args, action, record)
    if isinstance(args, FinishInput):
        return do_finish(h, state, args, action, record)
    if isinstance(args, AskHumanInput):
        action.observation = Observation(ok=True, text="handed to a human")
        raise HandedOff(f"the model asked for help: {args.reason or args.question}", question=args.question)
    raise TypeError(f"no tool takes {type(args).__name__}")  # TOOL_INPUTS names only the inputs above


def parse(call: ToolCall, inputs: Mapping[str, type[BaseModel]]) -> BaseModel | str:
    """The call's input validated against its tool's schema, or why it is malformed (said for the model)."""
    schema = inputs.get(call.name)
    if schema is None:
        return f"unknown tool {call.name!r}; the tools are: {', '.join(inputs)}"
    if call.error:
        return (
            f"malformed call to {call.name}: {call.error}; send its arguments as one JSON object that fits its schema"
        )
    try:
        return schema.model_validate(call.input)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())
        return f"malformed input for {call.name}: {problems}; send the fields its schema asks for"


def do_search(h: Harness, args: SearchInput) -> Observation:
    return Observation(ok=True, text=h.redact(search_code(h.workspace.path, args.query, args.path_glob)))


def do_plan(h: Harness, state: RunState, args: PlanInput) -> Observation:
    refused = [d for d in (state.gate.check_path(p) for p in args.impact) if not d.allowed]
    if refused:
        reasons = "; ".join(d.reason for d in refused)
        return Observation(ok=False, text=f"plan refused, its impact leaves the scope: {reasons}; plan again")
    state.plan = Plan(steps=args.steps, impact=args.impact)
    state.notes.conclude(
        f"planned {len(args.steps)} steps; expected to change {', '.join(args.impact) or 'nothing named'}"
    )
    h.reporter.say(f"plan: {len(args.steps)} steps, impact {', '.join(args.impact)}")
    return Observation(ok=True, text="plan recorded")


def do_edit(h: Harness, state: RunState, args: EditInput, intent: str) -> Observation:
    observation = edit(h.workspace, state.gate, args, state.change.stats())
    if args.command != "view":
        what = f"{args.command} {args.path}" + (f" ({first_line(intent)})" if intent else "")
        if observation.ok:
            state.change.forget()
            state.notes.edited(what)
            state.notes.conclude(f"step {state.meter.steps}: {what}")
        else:
            state.notes.conclude(f"step {state.meter.steps}: {what} refused: {first_line(observation.text)}")
        h.reporter.say(f"edit: {what}: {'ok' if observation.ok else 'refused'}")
    observation.text = h.redact(observation.text)
    return observation


def render_run(run: CheckRun) -> str:
    """One line per check; the failure details are shown once, under "Latest check failure"."""
    return "\n".join(f"{r.name}: {r.status} (exit {r.exit_code}, {r.duration_s:.1f}s)" for r in run.results)


def run_checks(h: Harness, state: RunState, names: list[str] | None, record: StepRecord) -> CheckRun:
    began = h.clock()
    changed = state.change.changed_files()
    run = h.checks.run(names, commit=h.workspace.head_sha, changed_files=changed, limit_s=time_left(h, state))
    h.workspace.put_back_unwritten(state.gate)  # only what the model wrote stays: not what the checks wrote
    state.change.forget()
    record.checks_s += h.clock() - began
    state.checks.ran(run, tree=state.change.diff())
    for r in run.results:
        h.reporter.say(f"checks: {r.name} {r.status}")
    return run


def do_run_checks(
    h: Harness, state: RunState, args: RunChecksInput, action: ActionRecord, record: StepRecord
) -> Observation:
    unknown = [n for n in args.names or [] if h.contract.check(n) is None]
    if unknown:
        names = ", ".join(c.name for c in h.contract.checks)
        return Observation(ok=False, text=f"no such check: {', '.join(unknown)}; the contract's checks are: {names}")
    run = action.checks = run_checks(h, state, args.names, record)
    action.expectation = expectation_met(args.expect, run) if args.expect else None
    note = steer(h, state, run, action)
    text = render_run(run)
    if e := action.expectation:
        text += f"\nexpected: {e.expect} — {'met' if e.met else 'NOT met'} ({e.actual})"
    return Observation(ok=True, text=h.redact(text + note))


def do_finish(h: Harness, state: RunState, args: FinishInput, action: ActionRecord, record: StepRecord) -> Observation:
    """Verified by the harness: every check that can run passes (or fails only with what the base commit already
    failed with), the change stays inside the scope and limits, no test that ran on the base commit was weakened, and
    every criterion has evidence the harness produced."""
    if not state.change.stats().files:
        return Observation(
            ok=False, text="finish refused: nothing has changed yet; make the change the contract asks for"
        )
    h.reporter.phase("verifying")
    run = action.checks = run_checks(h, state, None, record)
    return settle(h, state, run, args, action, last_chance=False)


def settle(
    h: Harness, state: RunState, run: CheckRun, args: FinishInput, action: ActionRecord, *, last_chance: bool
) -> Observation:
    """Judge the change on `run` as `finish` asks: raises Accepted or Unverified, or says why it is refused.
    `last_chance`: the model stopped moving, so a change short of evidence ends unverified at once."""
    violations = state.gate.violations(state.change.stats())  # after the checks: they may have written files
    base_run = evidence_base_run(h, state)
    failed = new_failures(base_run, run)
    if failed or violations or (not any(r.status != "not_run" for r in run.results) and h.contract.checks):
        problems = [f"{r.name} {r.status}" for r in failed] + [v.reason for v in violations]
        note = steer(h, state, run, action)
        text = "finish refused: " + "; ".join(problems or ["no check could run"]) + "\n" + render_run(run) + note
        return Observation(ok=False, text=h.redact(text))
    evidence = take_evidence(h, state, run, args.criteria, base_run)
    state.finish.shown(evidence)
    h.trace.append(EvidenceRecord(step=state.meter.steps, evidence=evidence))
    if evidence.regressions:
        weakened = "; ".join(f"{r.test}: {r.why}" for r in evidence.regressions)
        key = "weakened tests: " + ", ".join(r.test for r in evidence.regressions)
        note = count_failure(h, state, key, weakened)
        text = f"finish refused: tests that ran on the base commit were weakened: {weakened}{note}"
        return Observation(ok=False, text=h.redact(text))
    state.finish.claimed(run, args.summary, args.risks, args.criteria)
    if evidence.verified:
        action.observation = Observation(ok=True, text="verified: the checks pass and every criterion is shown")
        raise Accepted(accepted_reason(run, evidence))
    missing = missing_evidence(evidence, h.contract.kind)
    if not h.contract.checks:
        raise Unverified(
            "no check could verify the change: the contract has none (add `checks:` to .github/ai-fix.yml)"
        )
    if not last_chance and state.stalls.refuse_evidence():
        return Observation(ok=False, text=h.redact(f"finish refused, the change is not verified yet: {missing}"))
    raise Unverified(f"the checks pass, but not every criterion is shown: {missing}")


def accepted_reason(run: CheckRun, evidence: Evidence) -> str:
    old = {f.check for f in evidence.old_failures}
    checks = f"all {len(run.results)} contract checks pass"
    if old:
        checks = f"the {len(run.results)} contract checks pass but for what already failed on the base commit"
    return (
        f"{checks}, every criterion is shown (by a test that fails on the base commit and passes after the change, "
        "or by the checks for what must keep working), and the change stays within scope and limits"
    )


def passing_change(h: Harness, state: RunState) -> CheckRun | None:
    """The checks' latest run, when it ran on the change as it is now and nothing failed that the base commit did
    not fail with: a change that must never be rolled back."""
    run = state.checks.latest
    if run is None or not state.change.stats().files or state.checks.latest_tree != state.change.diff():
        return None
    if not any(r.status != "not_run" for r in run.results) or new_failures(evidence_base_run(h, state), run):
        return None
    return run


def stalled(h: Harness, state: RunState, what: str, record: StepRecord) -> str:
    """The model stopped moving. A passing change is judged as `finish` would judge it and the run ends (accepted,
    or unverified with the change kept); any other change is rolled back and the scope narrowed."""
    run = passing_change(h, state)
    if run is not None:
        state.notes.conclude(f"step {state.meter.steps}: no progress ({what}) with the checks passing: judged as it is")
        h.reporter.say(f"policy: no progress ({what}); the checks pass, so the change is judged as it is")
        claim = FinishInput(summary=state.finish.summary, risks=state.finish.risks, criteria=state.finish.mapping)
        action = ActionRecord(tool="finish", input={}, decision="executed", observation=Observation(ok=True, text=""))
        action.checks = run
        try:
            refused = settle(h, state, run, claim, action, last_chance=True)
        finally:
            record.actions.append(action)
        action.observation = refused
    return no_progress(h, state, what)
