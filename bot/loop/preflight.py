"""Before the first model turn: the contract must be complete, setup must work and the baseline must run."""

from __future__ import annotations

from bot.loop.exits import HandedOff, NeedsClarification
from bot.loop.harness import Harness
from bot.loop.prompt import stable_layer
from bot.loop.records import BaselineRecord, StartRecord
from bot.loop.state import RunState
from bot.markdown import first_line


def clarification_reason(missing: list[str]) -> str:
    return "the task contract is incomplete: " + "; ".join(missing)


def prepare(h: Harness, state: RunState, *, planning: bool = False) -> None:
    """Setup, the baseline on the base commit and the stable layer (the planning phase's, when `planning`);
    an environment error stops here."""
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
    if contract.status == "needs_clarification":
        raise NeedsClarification(clarification_reason(contract.missing))
    h.reporter.say(f"model: {h.config.model_reason or h.config.model}")
    h.reporter.phase("setup")
    if (missing := h.checks.setup()) is not None:
        h.trace.append(BaselineRecord(setup_problem=missing))
        raise HandedOff(f"environment error during setup: {missing}", next_steps=[f"fix the setup: {missing}"])
    h.reporter.phase("baseline")
    state.baseline = state.latest = h.checks.baseline(ws.base_sha)
    h.trace.append(BaselineRecord(checks=state.baseline))
    for r in state.baseline.results:
        h.reporter.say(f"baseline: {r.name} {r.status}")
    broken = [r for r in state.baseline.results if r.status == "error"]
    if broken:
        named = "; ".join(f"check '{r.name}' could not run: {r.reason or first_line(r.output)}" for r in broken)
        raise HandedOff(
            f"environment error: {named}",
            next_steps=["install what is missing in the sandbox image or add it to the contract's setup, then retry"],
        )
    state.good = {r.name: r.status for r in state.baseline.results}
    state.environment_ok = True
    state.stable = h.redact(stable_layer(contract, h.context.repo_map(h.config.repo_map_tokens), planning=planning))
    h.reporter.phase("steps")
