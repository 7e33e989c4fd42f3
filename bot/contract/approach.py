"""Plan before code: the approval policy, the two approaches a planning phase proposes, its estimate, and the
approach a maintainer approved (which then joins the contract the run is held to)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

APPROACHES = 2
"""How many approaches a plan compares."""


class Approval(BaseModel):
    """Whether a job waits for a maintainer's approval of a plan before it changes code."""

    mode: Literal["none", "plan"] = "none"
    timeout_days: float = 7.0
    """How long a plan waits for an answer before the job is cancelled (fractions allowed: 0.5 = 12 hours)."""
    source: str = "default"
    """Why: `.github/ai-fix.yml`, the `ai-fix:plan` label, or `/agent plan` by a writer."""

    def wait_words(self) -> str:
        """How long a plan waits, in words: "7 days", "12 hours", "30 minutes", "4 seconds"."""
        seconds = self.timeout_days * 86_400
        for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
            if seconds >= size:
                n = round(seconds / size, 1)
                return f"{n:g} {unit}{'' if n == 1 else 's'}"
        return f"{seconds:.0f} seconds"


class Approach(BaseModel):
    """One way to do the task, as the model proposed it (untrusted text: rendered inert)."""

    title: str = Field(min_length=1, max_length=200)
    steps: list[str] = Field(min_length=1)
    files: list[str] = Field(default_factory=list)
    """Repository-relative paths it would change."""
    impact: str = ""
    """What else the change touches or could break (callers, behaviour, interfaces)."""
    risks: list[str] = Field(default_factory=list)
    rollback: str = ""
    """How to undo it."""
    tests: list[str] = Field(default_factory=list)
    """The tests it would add, and what each shows."""


class Proposal(BaseModel):
    """What the `propose` tool returns: two approaches, the one recommended and why."""

    approaches: list[Approach] = Field(min_length=APPROACHES, max_length=APPROACHES)
    recommended: Literal[1, 2]
    why: str = Field(min_length=1)


class Span(BaseModel):
    low: float
    high: float


class Estimate(BaseModel):
    """What a run of one approach is expected to take, and how that was worked out (see docs/using.md, "Plan approval")."""

    model: str
    steps: Span
    input_tokens: Span
    """Every prompt token, however it is billed."""
    cached_tokens: Span
    """Of those, read from the prompt cache."""
    output_tokens: Span
    usd: Span | None
    """None when the model is not in the price table."""
    capped: list[str] = Field(default_factory=list)
    """Figures the contract's budget cuts short ("steps: the budget stops a run at 30")."""
    basis: dict[str, float] = Field(default_factory=dict)
    """The measured inputs: stable and per-step context tokens, output per step, the planning phase's spend."""


class ApprovedApproach(BaseModel):
    """The approach a maintainer chose; the run is held to it and the PR names it."""

    number: int
    approach: Approach
    recommended: int
    """The number the plan recommended (the choice may differ)."""
    approved_by: str
    revision: int = 1
    """Which plan: 1 for the first, one more after each `/agent revise`."""
    estimate: Estimate | None = None


class EstimateCheck(BaseModel):
    """The estimate against what the run used: written in the trace's end record, to check estimates later."""

    estimate: Estimate
    steps: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    usd: float | None
    within: dict[str, bool]
    """Per figure: did the actual fall inside the estimated range?"""

    @classmethod
    def of(
        cls, estimate: Estimate, *, steps: int, prompt: int, cached: int, output: int, usd: float | None
    ) -> EstimateCheck:
        def inside(span: Span | None, value: float | None) -> bool:
            return span is not None and value is not None and span.low <= value <= span.high

        return cls(
            estimate=estimate,
            steps=steps,
            input_tokens=prompt,
            cached_tokens=cached,
            output_tokens=output,
            usd=usd,
            within={
                "steps": inside(estimate.steps, steps),
                "input_tokens": inside(estimate.input_tokens, prompt),
                "output_tokens": inside(estimate.output_tokens, output),
                "usd": inside(estimate.usd, usd),
            },
        )
