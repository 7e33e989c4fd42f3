"""What a finished run leaves behind; the PR body, check run and evidence.json are rendered from it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from bot.checks.models import CheckRun, SetupReport
from bot.contract.models import TaskContract
from bot.evidence.models import Evidence
from bot.vocabulary import ACCEPTED, Outcome
from bot.workspace.models import DiffStats


class PlanStep(BaseModel):
    do: str
    done_when: str


class Plan(BaseModel):
    steps: list[PlanStep] = Field(default_factory=list)
    impact: list[str] = Field(default_factory=list)
    """Paths the plan expects to change."""


class Handoff(BaseModel):
    done: list[str] = Field(default_factory=list)
    not_done: list[str] = Field(default_factory=list)
    ruled_out: list[str] = Field(default_factory=list)
    """Approaches tried and why they failed."""
    question: str = ""
    """What the human is asked, when the run stopped to ask."""
    next_steps: list[str] = Field(default_factory=list)
    tried: list[str] = Field(default_factory=list)
    """What each step tried, in one line each (the model's tool calls and what came of them)."""
    attempts_ref: str = ""
    """Where rolled-back attempts are kept for a person to fetch (a ref outside `refs/heads/`); empty when none was
    kept."""


class Cost(BaseModel):
    model: str = ""
    small_model: str = ""
    rounds: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    usd: float | None = 0.0
    """None when a model used is missing from the price table."""
    wall_s: float = 0.0


class RunResult(BaseModel):
    outcome: Outcome
    reason: str
    """Why the run ended this way, in one sentence."""
    contract: TaskContract
    branch: str = ""
    base_sha: str = ""
    head_sha: str = ""
    setup: SetupReport | None = None
    """How the environment was prepared; None when the run ended before setup."""
    baseline: CheckRun | None = None
    final: CheckRun | None = None
    diff: DiffStats = Field(default_factory=DiffStats)
    diff_text: str = ""
    plan: Plan | None = None
    model_summary: str = ""
    """The model's own `finish` summary: untrusted, rendered inert and labelled as the model's."""
    risks: list[str] = Field(default_factory=list)
    handoff: Handoff = Field(default_factory=Handoff)
    evidence: Evidence = Field(default_factory=Evidence)
    """What the harness showed: the reproduction, each criterion's evidence, weakened tests."""
    cost: Cost = Field(default_factory=Cost)
    steps: int = 0

    @property
    def accepted(self) -> bool:
        return self.outcome == ACCEPTED

    def evidence_json(self) -> dict[str, Any]:
        """The `evidence.json` document."""
        names = [c.name for c in self.contract.checks]
        checks = []
        for name in names:
            base = self.baseline.result(name) if self.baseline else None
            final = self.final.result(name) if self.final else None
            checks.append(
                {
                    "name": name,
                    "command": check.run if (check := self.contract.check(name)) else "",
                    "baseline": {"status": base.status if base else "not_run"},
                    "final": {
                        "status": final.status if final else "not_run",
                        "exit_code": final.exit_code if final else None,
                        "duration_s": round(final.duration_s, 3) if final else None,
                    },
                }
            )
        return {
            ACCEPTED: self.accepted,
            "outcome": self.outcome,
            "reason": self.reason,
            "checks": checks,
            "criteria": [
                {"text": c.text, "origin": c.origin, "kind": c.kind, "verified": c.verified, "by": c.by, "note": c.note}
                | ({"needs": c.needs} if c.needs else {})
                for c in self.evidence.criteria
            ],
            "reproduction": self.evidence.reproduction.model_dump(mode="json"),
            "regressions": [r.model_dump(mode="json") for r in self.evidence.regressions],
            "markers": [m.model_dump(mode="json") for m in self.evidence.markers],
            "old_failures": [f.model_dump(mode="json") for f in self.evidence.old_failures],
            "evidence_base": self.evidence.base_sha,
            "setup": self.setup.model_dump(mode="json", exclude_defaults=True) if self.setup else None,
            "diff": {
                "files": [f.path for f in self.diff.files],
                "added": self.diff.added,
                "removed": self.diff.removed,
            },
            "cost": {
                "input_tokens": self.cost.input_tokens,
                "output_tokens": self.cost.output_tokens,
                "cache_read_tokens": self.cost.cache_read_tokens,
                "cache_write_tokens": self.cost.cache_write_tokens,
                "usd": self.cost.usd,
            },
            "steps": self.steps,
        }
