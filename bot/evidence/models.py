"""What the harness showed about a change; evidence.json, the PR's Evidence and the outcome are made from it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from bot.contract.models import Criterion
from bot.vocabulary import BaseStatus

ReproStatus = Literal["verified", "missing", "passes_on_base", "fails_after", "not_collected_on_base"]


class ReproTest(BaseModel):
    id: str
    """A test id (`tests/test_calc.py::test_mul`), or a check's name when its runner reports no single tests."""
    check: str
    base: BaseStatus
    """Its status on the base commit's code (with the change's test files laid over, for a test the change wrote)."""
    after: str
    message: str = ""
    """How it failed on the base commit."""
    laid_over: bool = False
    """True when the change's own test files were run against the base code; False when the base commit had it."""


class Reproduction(BaseModel):
    status: ReproStatus = "missing"
    tests: list[ReproTest] = Field(default_factory=list)


class CriterionEvidence(BaseModel):
    text: str
    origin: Literal["stated", "derived", "review"]
    verified: bool = False
    by: list[str] = Field(default_factory=list)
    """The tests or checks that show it."""
    note: str = ""
    """How it was shown, or what is missing."""
    for_reviewer: bool = False
    """Wording, docs or naming: for the reviewer to judge; it never makes a run unverified."""


class Regression(BaseModel):
    test: str
    check: str
    base: str
    after: str
    """`missing` (deleted or renamed), `skipped` (incl. xfail), or `pass` when a changed test no longer fails on the base code."""
    why: str


class AddedMarker(BaseModel):
    file: str
    line: int
    marker: str
    test: str = ""


class CriterionMapping(BaseModel):
    """What `finish` claims: this criterion is shown by this test (or check)."""

    criterion: str
    test: str


class Evidence(BaseModel):
    base_sha: str = ""
    """The commit the evidence was taken against (the pull request's original base in later rounds)."""
    reproduction: Reproduction = Field(default_factory=Reproduction)
    criteria: list[CriterionEvidence] = Field(default_factory=list)
    regressions: list[Regression] = Field(default_factory=list)
    markers: list[AddedMarker] = Field(default_factory=list)
    """skip/xfail markers the change adds, by file, line and test."""

    @property
    def verified(self) -> bool:
        """Every criterion a test can show is shown, and no test was weakened."""
        return not self.regressions and all(c.verified for c in self.criteria if not c.for_reviewer)

    def unverified(self) -> list[CriterionEvidence]:
        return [c for c in self.criteria if not c.verified and not c.for_reviewer]

    @classmethod
    def not_taken(cls, criteria: list[Criterion], why: str) -> Evidence:
        """The evidence of a run that never reached a verified finish: every criterion open, with the reason."""
        return cls(
            criteria=[
                CriterionEvidence(text=c.text, origin=c.origin, note=why, for_reviewer=c.for_reviewer) for c in criteria
            ]
        )
