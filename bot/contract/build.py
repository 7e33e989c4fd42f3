"""Build the task contract of a job from its snapshot and the repository's default branch.

`build_contract` is the one entry point (GitHub jobs and local runs alike). Everything but the
reads through `RepoFiles` is pure: the snapshot is frozen, `now` is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from bot.contract.approach import Approval
from bot.contract.config import CONFIG_PATH, RepoConfig, parse_config
from bot.contract.criteria import criterion_kind
from bot.contract.detect import detect_checks
from bot.contract.evidence import find_evidence
from bot.contract.files import RepoFiles
from bot.contract.kind import task_kind
from bot.contract.models import (
    Budget,
    Check,
    CiConfig,
    Conventions,
    Criterion,
    ModelConfig,
    Provenance,
    SandboxConfig,
    Scope,
    TaskContract,
)
from bot.contract.narrow import base_scope, narrow_budget, narrow_checks, narrow_scope
from bot.contract.root import Root
from bot.contract.sanitize import describe_removed, sanitize
from bot.contract.sections import HEADINGS, IssueSections, parse_sections
from bot.contract.setup import detect_setup
from bot.errors import ConfigError
from bot.labels import PLAN_LABEL
from bot.snapshot import WRITE_PERMISSIONS, Comment, Snapshot
from bot.vocabulary import BEHAVIOUR, NEEDS_CLARIFICATION, REGRESSION

CONVENTION_FILES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md")
MAX_CONVENTION_CHARS = 20_000
MAX_UNTRUSTED_CHARS = 4_000
OWN_MARKER_PREFIX = "<!-- ai-fix:"
"""Comments carrying one of ai-fix's own hidden markers are its own output, not instructions."""

MISSING_CRITERIA = (
    "acceptance criteria or reproducible evidence: say what must be true when the work is done "
    "(a `## Acceptance criteria` section), or show the problem (a traceback or error message, a failing "
    "command or test, expected against actual behaviour, or a code sample)"
)
REPRO_CRITERION = "A test reproducing the report is added; it fails before the change and passes after it."
NO_CHECKS = (
    "checks: none were found or configured, so nothing can verify the change and the run can end `unverified` at "
    "best; add `checks:` to .github/ai-fix.yml (e.g. `python -m pytest -q`)"
)


def snapshot_from_markdown(text: str, repo: str) -> Snapshot:
    """A local task: `# title` on the first line, the body below. Number 0 marks it as local."""
    lines = text.lstrip("\ufeff").lstrip("\n").split("\n")
    first = lines[0].strip() if lines else ""
    if not first.startswith("# ") or not first[2:].strip():
        raise ConfigError(
            f"the issue file must start with the title as a '# ' heading (got {first[:60]!r}); "
            "e.g. '# Crash when parsing empty files' and the body below"
        )
    return Snapshot(
        repo=repo,
        number=0,
        kind="issue",
        title=first[2:].strip(),
        body="\n".join(lines[1:]).strip(),
        author="local",
        author_permission="admin",
        sender="local",
        sender_permission="admin",
    )


def approval(config: RepoConfig | None, snapshot: Snapshot, source: str) -> Approval:
    """`.github/ai-fix.yml`'s `approval:`, turned on for this issue by the `ai-fix:plan` label or `/agent plan`."""
    days = config.approval_timeout_days if config else Approval().timeout_days
    if snapshot.plan_requested:
        return Approval(mode="plan", timeout_days=days, source=f"/agent plan by @{snapshot.sender}")
    if any(label.casefold() == PLAN_LABEL for label in snapshot.labels):
        return Approval(mode="plan", timeout_days=days, source=f"the {PLAN_LABEL} label")
    if config is not None and "approval" in config.model_fields_set:
        return Approval(mode=config.approval, timeout_days=days, source=f"{CONFIG_PATH} ({source})")
    return Approval(timeout_days=days)


def _is_own(comment: Comment) -> bool:
    return comment.author.endswith("[bot]") or OWN_MARKER_PREFIX in comment.body


def _quoted(text: str) -> str:
    if len(text) > MAX_UNTRUSTED_CHARS:
        text = text[:MAX_UNTRUSTED_CHARS] + " [truncated]"
    return "\n".join(f"> {line}" for line in text.split("\n"))


class _Builder:
    """Accumulates one contract; each step reads one source and records where fields came from."""

    def __init__(self, snapshot: Snapshot, files: RepoFiles) -> None:
        self.snapshot = snapshot
        self.files = files
        self.root = Root(files)
        self.sources: dict[str, str] = {}
        self.ignored: list[str] = []
        self.removed: dict[str, int] = {}

    def note_source(self, field: str, where: str) -> None:
        self.sources[field] = f"{self.sources[field]}; {where}" if field in self.sources else where

    def sanitized(self, text: str) -> str:
        """The visible text; what was hidden is counted for provenance."""
        clean = sanitize(text)
        for what, n in clean.removed.items():
            self.removed[what] = self.removed.get(what, 0) + n
        return clean.text

    def config(self) -> RepoConfig | None:
        text = self.files.read_text(CONFIG_PATH)
        return None if text is None else parse_config(text, CONFIG_PATH)

    def base_checks(self, config: RepoConfig | None) -> list[Check]:
        if config is not None and "checks" in config.model_fields_set:
            self.sources["checks"] = f"{CONFIG_PATH} ({self.files.source})"
            return [Check(**c.model_dump(), origin="config") for c in config.checks]
        self.sources["checks"] = f"detected in {self.files.source}"
        return detect_checks(self.root)

    def setup(
        self, config: RepoConfig | None, checks: list[Check]
    ) -> tuple[list[str], list[str], Literal["config", "detected"], SandboxConfig]:
        """The config's setup, else the one detected (with network for it, unless the config sets `sandbox.network`),
        with where each command came from."""
        sandbox = SandboxConfig(**config.sandbox.model_dump()) if config else SandboxConfig()
        if config is not None and "setup" in config.model_fields_set:
            return list(config.setup), [], "config", sandbox
        offline = config is not None and "network" in config.sandbox.model_fields_set and sandbox.network == "none"
        detected = detect_setup(self.root, checks, offline=offline)
        if detected:
            self.sources["setup"] = f"detected in {self.files.source}"
            if config is None or "network" not in config.sandbox.model_fields_set:
                sandbox = sandbox.model_copy(update={"network": "setup"})
        return [d.run for d in detected], [d.source for d in detected], "detected", sandbox

    def conventions(self) -> Conventions:
        found: dict[str, str] = {}
        for path in CONVENTION_FILES:
            text = self.files.read_text(path)
            if text is not None:
                text = sanitize(text).text
                found[path] = (
                    text if len(text) <= MAX_CONVENTION_CHARS else text[:MAX_CONVENTION_CHARS] + "\n[truncated]"
                )
        if found:
            self.sources["conventions"] = f"{', '.join(found)} ({self.files.source})"
        return Conventions(files=found)

    def parts(self) -> list[tuple[str, str, IssueSections]]:
        """(source label, visible text, sections) of the body, then of each writer comment in order."""
        s = self.snapshot
        body = self.sanitized(s.body)
        out = [("issue", body, parse_sections(body))]
        for c in s.comments:
            if c.permission not in WRITE_PERMISSIONS or _is_own(c):
                continue
            text = self.sanitized(c.body)
            if text and not text.startswith("/agent"):
                out.append((f"comment by @{c.author}", text, parse_sections(text)))
        return out

    def untrusted(self) -> list[dict[str, str]]:
        s = self.snapshot
        others = [c for c in s.comments if c.permission not in WRITE_PERMISSIONS] + s.untrusted_comments
        kept = []
        for c in others:
            if _is_own(c):
                continue
            text = self.sanitized(c.body)
            if text:
                kept.append({"author": c.author, "permission": c.permission, "excerpt": _quoted(text)})
        return kept

    def feedback(self) -> list[str]:
        s = self.snapshot
        lines = [line.strip() for line in self.sanitized(s.feedback).split("\n") if line.strip()]
        if lines:
            self.sources["feedback"] = f"/agent retry by @{s.sender}"
        for rc in s.review_comments:
            if rc.permission in WRITE_PERMISSIONS:
                where = f"{rc.path}:{rc.line}" if rc.path and rc.line else rc.path or "review"
                lines.append(f"{where}: {self.sanitized(rc.body)}")
                self.sources["feedback"] = "review comments" + (" and /agent retry" if s.feedback.strip() else "")
        return lines


@dataclass
class _Read:
    """What the issue's and the writer comments' sections say, each narrowing what came before it."""

    scope: Scope
    checks: list[Check]
    budget: Budget
    goal: str = ""
    non_goals: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    stated: list[str] = field(default_factory=list)
    kind_section: str = ""
    discussion: list[str] = field(default_factory=list)

    def add(self, b: _Builder, source: str, sec: IssueSections) -> None:
        for name in sec.found:
            b.note_source(name, f"{source} ## {HEADINGS[name]}")
        self.goal = sec.goal or self.goal
        self.non_goals += sec.non_goals
        self.constraints += sec.constraints
        self.stated += sec.acceptance_criteria
        self.kind_section = sec.kind or self.kind_section
        self.scope, notes = narrow_scope(self.scope, sec.scope_allow, sec.scope_deny, source)
        b.ignored += notes
        self.checks, notes = narrow_checks(self.checks, sec.checks, source)
        b.ignored += notes
        self.budget, notes = narrow_budget(self.budget, sec.budget, source)
        b.ignored += notes
        if source != "issue" and sec.free_text:
            self.discussion.append(f"{source}:\n{sec.free_text}")


def _goal(b: _Builder, read: _Read, title: str, issue_free_text: str) -> str:
    """The stated goal, else the title and the body's free text; with what writers added in comments."""
    goal = read.goal
    if not goal:
        goal = "\n\n".join(t for t in (title, issue_free_text) if t)
        b.sources["goal"] = "issue title and body"
    if read.discussion:
        goal = "\n\n".join([goal, *read.discussion])
        b.note_source("goal", "writer comments")
    return goal


def _criteria(stated: list[str], feedback: list[str], evidence: bool, checks: list[Check]) -> list[Criterion]:
    """The stated criteria and the review's, then those the harness derives: the reproduction, the checks."""
    criteria = [Criterion(text=t, origin="stated", kind=criterion_kind(t)) for t in stated]
    criteria += [Criterion(text=f, origin="review", kind=criterion_kind(f)) for f in feedback]
    if evidence:
        criteria.append(Criterion(text=REPRO_CRITERION, origin="derived", kind=BEHAVIOUR))
    if checks:
        names = ", ".join(c.name for c in checks)
        criteria.append(Criterion(text=f"The checks pass: {names}.", origin="derived", kind=REGRESSION))
    return criteria


def _blocking(read: _Read, evidence: bool, config: RepoConfig | None) -> list[str]:
    """What the contract lacks that stops the run: criteria or evidence, a scope."""
    missing: list[str] = []
    if not read.stated and not evidence:
        missing.append(MISSING_CRITERIA)
    if not read.scope.allow:
        missing.append(
            f"a non-empty scope: {CONFIG_PATH}'s `scope.allow` is empty; list the paths ai-fix may change"
            if config is not None and not config.scope.allow
            else "a scope inside the allowed one: every glob the issue's Scope asks for lies outside "
            f"{CONFIG_PATH}'s `scope.allow`; list paths inside it"
        )
    return missing


def _provenance(b: _Builder, evidence: list[str], taken: str) -> Provenance:
    snapshot = b.snapshot
    untrusted = b.untrusted()
    if snapshot.author_permission not in WRITE_PERMISSIONS:
        b.sources["body"] = (
            f"written by @{snapshot.author} ({snapshot.author_permission}); the job was started by "
            f"@{snapshot.sender} ({snapshot.sender_permission})"
        )
    if b.removed:
        b.sources["hidden_text_removed"] = describe_removed(b.removed)
    local = snapshot.number == 0
    return Provenance(
        repo=snapshot.repo,
        number=None if local else snapshot.number,
        kind="local" if local else snapshot.kind,
        sender=snapshot.sender or None,
        sender_permission=snapshot.sender_permission or None,
        author=snapshot.author or None,
        author_permission=snapshot.author_permission or None,
        snapshot_at=taken,
        sources=b.sources,
        untrusted=untrusted,
        evidence=evidence,
        ignored=b.ignored,
    )


def build_contract(snapshot: Snapshot, files: RepoFiles, *, now: datetime | None = None) -> TaskContract:
    """The task contract of a job: config (or detection) narrowed by the issue and writer comments.

    Raises ConfigError (naming key and line) when `.github/ai-fix.yml` is broken: no silent defaults.
    """
    b = _Builder(snapshot, files)
    config = b.config()
    if config is not None:
        for key in sorted(config.model_fields_set - {"checks"}):
            b.sources[key] = f"{CONFIG_PATH} ({files.source})"
    checks = b.base_checks(config)
    setup, setup_sources, setup_origin, sandbox = b.setup(config, checks)
    read = _Read(
        scope=base_scope(config.scope.allow, config.scope.deny) if config else base_scope(["**"], []),
        checks=checks,
        budget=Budget(**config.budget.model_dump()) if config else Budget(),
    )
    title = b.sanitized(snapshot.title)
    parts = b.parts()
    for source, _, sec in parts:
        read.add(b, source, sec)
    goal = _goal(b, read, title, parts[0][2].free_text)

    issue_text = "\n\n".join(part for _, part, _ in parts)
    evidence = find_evidence(issue_text)
    kind, b.sources["kind"] = task_kind(snapshot.labels, read.kind_section, evidence, f"{title}\n{issue_text}")
    feedback = b.feedback()
    missing = _blocking(read, bool(evidence), config)
    blocking = bool(missing)
    if not read.checks:
        missing.append(NO_CHECKS)
    conventions = b.conventions()
    taken = snapshot.taken_at or (now or datetime.now(UTC)).isoformat()
    return TaskContract(
        status=NEEDS_CLARIFICATION if blocking else "ready",
        missing=missing,
        kind=kind,
        title=title,
        goal=goal,
        non_goals=read.non_goals,
        constraints=read.constraints,
        acceptance_criteria=_criteria(read.stated, feedback, bool(evidence), read.checks),
        scope=read.scope,
        checks=read.checks,
        setup=setup,
        setup_sources=setup_sources,
        setup_origin=setup_origin,
        setup_secrets=list(config.setup_secrets) if config else [],
        budget=read.budget,
        sandbox=sandbox,
        model=ModelConfig(**config.model.model_dump()) if config else ModelConfig(),
        ci=CiConfig(**config.ci.model_dump()) if config else CiConfig(),
        feedback=feedback,
        provenance=_provenance(b, evidence, taken),
        conventions=conventions,
        approval=approval(config, snapshot, files.source),
    )
