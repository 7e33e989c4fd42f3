"""Before the first model turn: the contract must be complete, setup must work and the baseline must run."""

from __future__ import annotations

from bot.checks.models import SetupReport
from bot.contract.detect import can_verify
from bot.loop.budget import time_left
from bot.loop.exits import HandedOff, NeedsClarification
from bot.loop.harness import Harness
from bot.loop.prompt import stable_layer
from bot.loop.records import BaselineRecord, StartRecord
from bot.loop.setup_network import prepare_setup
from bot.loop.state import RunState
from bot.markdown import first_line
from bot.vocabulary import FAILED, NEEDS_CLARIFICATION

OFFLINE_SETUP = " (the setup ran without network: `sandbox.network` is `none`)"
OFFLINE_HINT = "if the setup downloads anything, give it network: `sandbox: {network: setup}` in .github/ai-fix.yml"


def clarification_reason(missing: list[str]) -> str:
    return "the task contract is incomplete: " + "; ".join(missing)


def prepare(h: Harness, state: RunState, *, planning: bool = False) -> None:
    """Setup, the baseline on the base commit and the stable layer (the planning phase's, when `planning`);
    an environment error stops here (a configured setup that fails is one; a guessed one is not: the
    baseline decides)."""
    contract, ws = h.contract, h.workspace
    h.trace.append(
        StartRecord(
            title=contract.title,
            model=h.config.model,
            small_model=h.config.small_model,
            model_reason=h.config.model_reason,
            branch=ws.branch,
            base_sha=ws.base_sha,
            contract=contract,
        )
    )
    if contract.status == NEEDS_CLARIFICATION:
        raise NeedsClarification(clarification_reason(contract.missing))
    h.reporter.say(f"model: {h.config.model_reason or h.config.model}")
    h.reporter.phase("setup")
    before = ws.untracked()
    setup = prepare_setup(h)
    h.reporter.setup(setup)
    # What setup wrote outside the repository's ignore rules (an egg-info, a build folder) is the environment,
    # not the change: kept in the tree for the checks, never committed, put back or cleaned.
    kept = ws.keep_out(ws.untracked() - before)
    if kept:
        h.reporter.say(
            f"setup wrote {len(kept)} paths git does not ignore, kept out of the change: {', '.join(kept[:5])}"
        )
    state.checks.prepared(setup)
    if setup.guess_failed:
        state.notes.conclude(f"the guessed setup failed ({setup.problem}); the checks run in the environment as it was")
    elif setup.status == FAILED:
        h.trace.append(BaselineRecord(setup=setup, setup_problem=setup.problem))
        offline = contract.sandbox.network == "none"
        raise HandedOff(
            f"environment error during setup: {setup.problem}" + (OFFLINE_SETUP if offline else ""),
            next_steps=[f"fix the setup: {setup.problem}"] + ([OFFLINE_HINT] if offline else []),
        )
    baseline_checks(h, state, setup)
    state.checks.ready()
    state.stable = h.redact(stable_layer(contract, h.context.repo_map(h.config.repo_map_tokens), planning=planning))
    h.reporter.phase("steps")


def baseline_checks(h: Harness, state: RunState, setup: SetupReport) -> None:
    """The contract's checks on the base commit; a check that cannot run there is an environment error (HandedOff),
    or is set aside when others can verify the criteria."""
    contract, ws = h.contract, h.workspace
    h.reporter.phase("baseline")
    baseline = h.checks.baseline(ws.base_sha, limit_s=time_left(h, state))
    state.checks.began(baseline)
    ws.put_back_unwritten(state.gate)
    h.trace.append(BaselineRecord(setup=setup, checks=baseline))
    for r in baseline.results:
        h.reporter.say(f"baseline: {r.name} {r.status}" + (f" ({r.reason})" if r.status == "not_run" else ""))
    broken = [r for r in baseline.results if r.status == "error"]
    set_aside = [r for r in baseline.results if r.status == "not_run"]
    verifiers = [c for c in contract.checks if can_verify(c) and c.name not in {r.name for r in set_aside}]
    if broken or (set_aside and not verifiers):
        named = "; ".join(
            f"check '{r.name}' could not run: {r.reason or first_line(r.output)}" for r in broken + set_aside
        )
        unverifiable = "" if broken else "no check that can verify the criteria can run: "
        raise HandedOff(
            f"environment error: {unverifiable}{named}",
            next_steps=["install what is missing in the sandbox image or add it to the contract's setup, then retry"],
        )
    state.notes.conclude(*(f"check {r.name} cannot run here and is not verified: {r.reason}" for r in set_aside))
    if setup.offline == FAILED:
        state.notes.conclude(
            f"setup ran on the base commit's files; for the change to {', '.join(setup.changed_inputs)} it could not "
            f"run again without network ({setup.offline_problem}), so the environment is the base files'"
        )
