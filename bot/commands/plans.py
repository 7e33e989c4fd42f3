"""Local plans: what `ai-fix run --plan-only` prints and keeps, and what `ai-fix run --approach N` takes from it.

A plan is kept under `AIFIX_WORK_DIR/plans/`, named after the repository, the commit the contract was read at
and the task's text, so `--approach N` with the same `--repo` and task finds it, and a task edited (or a
default branch that moved) asks for a new plan instead of running a stale one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel

from bot.contract.approach import ApprovedApproach, Estimate, Proposal
from bot.errors import ConfigError
from bot.loop.planning import PlanResult
from bot.loop.result import Cost
from bot.publish.plan import METHOD, estimate_text

LOCAL_APPROVER = "local"


class PlanFile(BaseModel):
    repo: str
    commit: str
    title: str
    proposal: Proposal
    estimates: list[Estimate]
    cost: Cost


def plan_path(work_dir: Path, repo: Path, commit: str, markdown: str) -> Path:
    key = hashlib.sha256("\0".join([str(repo), commit, markdown]).encode()).hexdigest()[:16]
    return work_dir / "plans" / f"{key}.json"


def save_plan(path: Path, plan: PlanFile) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(plan.model_dump_json(indent=1) + "\n")


def load_approach(path: Path, number: int) -> ApprovedApproach:
    """Approach `number` of the plan kept at `path`, approved here; ConfigError saying what to run when there is none."""
    if not path.is_file():
        raise ConfigError(
            "no plan for this task at this commit: run the same command with --plan-only first "
            "(a plan is kept per repository, commit and task text)"
        )
    plan = PlanFile.model_validate_json(path.read_text())
    if not 1 <= number <= len(plan.proposal.approaches):
        raise ConfigError(f"--approach {number}: the plan has approaches 1 and 2")
    return ApprovedApproach(
        number=number,
        approach=plan.proposal.approaches[number - 1],
        recommended=plan.proposal.recommended,
        approved_by=LOCAL_APPROVER,
        estimate=plan.estimates[number - 1],
    )


def describe_plan(result: PlanResult) -> list[str]:
    """The two approaches, the recommendation and the estimates, as `ai-fix run --plan-only` prints them."""
    p = result.proposal
    if p is None:
        return [f"planning: no proposal: {result.reason}"]
    lines: list[str] = []
    for n, (a, e) in enumerate(zip(p.approaches, result.estimates, strict=True), 1):
        lines.append(f"approach {n}{' (recommended)' if n == p.recommended else ''}: {a.title}")
        lines += [f"  step {i}: {step}" for i, step in enumerate(a.steps, 1)]
        lines += [f"  files: {', '.join(a.files) or '(none named)'}", f"  impact: {a.impact or '-'}"]
        lines += [f"  risk: {r}" for r in a.risks]
        lines += [f"  rollback: {a.rollback or '-'}"] + [f"  test: {t}" for t in a.tests]
        lines.append(f"  estimate: {estimate_text(e)} on {e.model}")
    spent = "unknown" if result.cost.usd is None else f"${result.cost.usd:.4f}"
    lines += [f"recommended: approach {p.recommended}: {p.why}", f"estimate method: {METHOD}"]
    lines.append(f"planning: {result.steps} model calls, {spent}")
    return lines
