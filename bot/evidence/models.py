"""What the harness showed about a change; evidence.json, the PR's Evidence and the outcome are made from it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from bot.contract.models import Criterion, stored_kind
from bot.vocabulary import BEHAVIOUR, REVIEWER, BaseStatus, CriterionKind

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
    kind: CriterionKind = BEHAVIOUR
    """`reviewer` (wording, docs or naming) is for a person to judge: it never makes a run unverified."""
    verified: bool = False
    by: list[str] = Field(default_factory=list)
    """The tests or checks that show it."""
    note: str = ""
    """How it was shown, or what is missing."""
    needs: str = ""
    """When it is not shown: the one thing that would show it, said so the model (and a person) can act on it."""

    _from_earlier_fields = model_validator(mode="before")(stored_kind)

    @property
    def for_reviewer(self) -> bool:
        return self.kind == REVIEWER


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


class OldFailure(BaseModel):
    """A test (or a check without single tests) that failed on the base commit and still fails: not the change's."""

    test: str
    check: str
    base: str = ""
    """How it failed on the base commit, in one line."""
    after: str = ""
    """How it fails after the change."""


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
    old_failures: list[OldFailure] = Field(default_factory=list)
    """What already failed on the evidence base and still fails: a known risk, never counted against the change."""

    @property
    def verified(self) -> bool:
        """Every criterion a test can show is shown, and no test was weakened."""
        return not self.regressions and all(c.verified for c in self.criteria if not c.for_reviewer)

    def unverified(self) -> list[CriterionEvidence]:
        return [c for c in self.criteria if not c.verified and not c.for_reviewer]

    @classmethod
    def not_taken(cls, criteria: list[Criterion], why: str) -> Evidence:
        """The evidence of a run that never reached a verified finish: every criterion open, with the reason."""
        return cls(criteria=[CriterionEvidence(text=c.text, origin=c.origin, kind=c.kind, note=why) for c in criteria])
