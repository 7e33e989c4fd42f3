"""The task contract: a reviewer-readable, harness-enforced description of one job."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from bot.contract.approach import Approval, ApprovedApproach
from bot.vocabulary import BEHAVIOUR, REGRESSION, REVIEWER, ContractReadiness, CriterionKind, RunKind

ALWAYS_DENIED: tuple[str, ...] = (
    ".git/**",
    ".github/workflows/**",
    ".github/ai-fix.yml",
    "**/.gitmodules",
    "**/.gitattributes",
)
"""Paths no job may change, whatever the config or the issue says (a submodule pointing anywhere, a `filter=`
that runs a command on checkout, are repository plumbing, not a fix)."""
INSTRUCTION_FILES: tuple[str, ...] = ("**/AGENTS.md", "**/CLAUDE.md", ".github/copilot-instructions.md")
"""Agent instruction files (what the next agent on the repository obeys): denied unless the scope allows one by
name, with an allow glob whose last part has no wildcard (`AGENTS.md`, `docs/**/CLAUDE.md`)."""
IGNORE_FILES: tuple[str, ...] = ("**/.gitignore",)
"""Ignore files, denied the same way: a pattern the model adds hides files from every later put-back and commit
(and `!` patterns bring back what the repository keeps out)."""
CI_FILES: tuple[str, ...] = (
    ".github/actions/**",
    "**/action.yml",
    "**/action.yaml",
    "CODEOWNERS",
    ".github/CODEOWNERS",
    "docs/CODEOWNERS",
    "**/.lfsconfig",
    ".github/dependabot.yml",
    ".github/dependabot.yaml",
    ".circleci/**",
    ".buildkite/**",
    ".gitlab-ci.yml",
    ".travis.yml",
    "azure-pipelines.yml",
    ".azure-pipelines/**",
    "Jenkinsfile",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    "appveyor.yml",
    ".appveyor.yml",
)
"""What the project's CI runs or obeys outside `.github/workflows` (actions a workflow `uses: ./`, the reviewers
a rule requires, where git-lfs fetches from, what dependabot updates, other CI services' pipelines): a change
there runs with the repository's secrets once pushed, so it is denied the same way."""
NAMED_ONLY: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("an agent instruction file", INSTRUCTION_FILES),
    ("an ignore file", IGNORE_FILES),
    ("code or configuration the project's CI runs", CI_FILES),
)
"""Each kind of file changed only when the scope allows it by name, with its globs."""


TaskKind = Literal["bug", "feature"]


def stored_kind(data: Any) -> Any:
    """A criterion stored before kinds existed (a job in flight across an upgrade) keeps what showed it."""
    if isinstance(data, dict) and "kind" not in data:
        if data.get("for_reviewer"):
            return {**data, "kind": REVIEWER}
        if data.get("rule") == "checks":
            return {**data, "kind": REGRESSION}
    return data


class Criterion(BaseModel):
    text: str
    origin: Literal["stated", "derived", "review"]
    """`stated` when it came from the issue, `derived` when ai-fix added it, `review` from a reviewer's request."""
    kind: CriterionKind = BEHAVIOUR
    """What shows it (`bot.contract.criteria` reads it from the words): a test failing on the base commit and passing
    after the change, the checks with nothing that passed on the base commit broken, or the reviewer."""

    _from_earlier_fields = model_validator(mode="before")(stored_kind)


class Scope(BaseModel):
    allow: list[str] = Field(default_factory=lambda: ["**"])
    """Path globs a change may touch."""
    deny: list[str] = Field(default_factory=lambda: list(ALWAYS_DENIED))
    """Path globs a change may never touch; always includes ALWAYS_DENIED."""


class Check(BaseModel):
    name: str
    run: str
    """Shell command, run by the harness in the sandbox; never supplied by the model."""
    timeout: int = 600
    """Seconds before the whole process tree is killed."""
    origin: Literal["config", "issue", "detected"] = "config"
    source: str = ""
    """Where a detected check came from (`tox.ini [testenv] commands`, a CI workflow's step, `pyproject.toml [tool.ruff]`)."""
    run_tests: str | None = None
    """How to run only some tests: a command with a `{tests}` placeholder for the test files (runners other than
    pytest and unittest, whose commands ai-fix derives itself); used to reproduce the report on the base commit."""


class Budget(BaseModel):
    max_steps: int = 30
    max_cost_usd: float = 3.0
    max_wall_minutes: int = 30
    max_files_changed: int = 10
    max_lines_changed: int = 400
    max_retries_same_failure: int = 2


SETUP_INPUTS: tuple[str, ...] = (
    "requirements*.txt",
    "requirements/*.txt",
    "*requirements*.txt",
    "tests/requirements*.txt",
    "test/requirements*.txt",
    "poetry.lock",
    "uv.lock",
    "pdm.lock",
    "npm-shrinkwrap.json",
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "go.sum",
    "Cargo.lock",
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "package.json",
)
"""The files setup commands depend on: a setup snapshot is reused until one of them changes."""


class SandboxConfig(BaseModel):
    image: str | None = None
    """Container backends' image; None: the operator's AIFIX_SANDBOX_IMAGE (python:3.12-slim unless set)."""
    network: Literal["none", "setup"] = "none"
    """`setup`: network only while the setup commands run."""
    pids: int = 512
    memory_mb: int = 2048
    cpus: float = 1.0
    pull: Literal["missing", "always", "never"] = "missing"
    """Container backends: pull the image when it is not on the host, before every job, or never."""
    setup_inputs: list[str] = Field(default_factory=lambda: list(SETUP_INPUTS))
    """Globs of the files the setup depends on (repository-relative); a change to one rebuilds the setup snapshot."""


class CiConfig(BaseModel):
    """How ai-fix reacts to the project's own CI on its pull requests (`ci:` in `.github/ai-fix.yml`)."""

    fix: bool = True
    """False: ai-fix neither re-runs nor fixes failing checks on this repository's pull requests."""
    rerun_first: bool = True
    """Re-run a failed GitHub Actions workflow's failed jobs once before a round: a pass there means flaky."""
    max_rounds: int = 3
    """CI rounds per pull request, counted from the rounds its body records (so across restarts)."""


class ModelConfig(BaseModel):
    name: str | None = None
    small: str | None = None


class Provenance(BaseModel):
    repo: str = ""
    """"owner/name", or the local path in local mode."""
    number: int | None = None
    kind: RunKind = "local"
    sender: str | None = None
    sender_permission: str | None = None
    author: str | None = None
    author_permission: str | None = None
    snapshot_at: str | None = None
    """ISO-8601 time the issue snapshot was taken."""
    sources: dict[str, str] = Field(default_factory=dict)
    """Contract field → where it came from (e.g. "checks": ".github/ai-fix.yml", "goal": "issue ## Goal")."""
    untrusted: list[dict[str, str]] = Field(default_factory=list)
    """Text kept as quoted data from authors without write access: {author, permission, excerpt}."""
    evidence: list[str] = Field(default_factory=list)
    """Kinds of reproducible evidence found in the issue (traceback, error message, code sample, ...)."""
    ignored: list[str] = Field(default_factory=list)
    """Requests of the issue that were refused because they would widen the config (scope, checks, budget)."""


class Conventions(BaseModel):
    files: dict[str, str] = Field(default_factory=dict)
    """Instruction file path (AGENTS.md, CLAUDE.md, ...) → its text, read from the default branch."""


class TaskContract(BaseModel):
    status: ContractReadiness
    missing: list[str] = Field(default_factory=list)
    """What the task lacks: acceptance criteria or a scope (then it cannot start), or checks (then nothing can
    verify it: a run ends `unverified` at best)."""
    kind: TaskKind = "bug"
    """A bug report or new behaviour (from the labels, a `## Kind` section, else the kind of evidence given):
    only new behaviour may be shown by a test that cannot even be collected before the change."""
    title: str = ""
    goal: str = ""
    non_goals: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    acceptance_criteria: list[Criterion] = Field(default_factory=list)
    scope: Scope = Field(default_factory=Scope)
    checks: list[Check] = Field(default_factory=list)
    setup: list[str] = Field(default_factory=list)
    setup_sources: list[str] = Field(default_factory=list)
    """Where each detected setup command came from, in the order of `setup` (empty for a configured setup)."""
    setup_origin: Literal["config", "detected"] = "config"
    """`detected` when `.github/ai-fix.yml` names no setup and ai-fix found it in the repository."""
    setup_secrets: list[str] = Field(default_factory=list)
    """Names of operator-provided values (`AIFIX_SETUP_SECRET_<NAME>`) passed to the setup commands only."""
    budget: Budget = Field(default_factory=Budget)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    ci: CiConfig = Field(default_factory=CiConfig)
    feedback: list[str] = Field(default_factory=list)
    """Reviewer feedback for this round (from `/agent retry` lines or review comments)."""
    provenance: Provenance = Field(default_factory=Provenance)
    conventions: Conventions = Field(default_factory=Conventions)
    approval: Approval = Field(default_factory=Approval)
    """Whether a maintainer approves a plan before the run changes code."""
    approach: ApprovedApproach | None = None
    """The approach a maintainer approved; the run follows it (it joins the model's stable context)."""

    def commands(self) -> tuple[str, ...]:
        """Setup's commands, then every check's: what the job's sandbox must be able to run."""
        return (*self.setup, *(c.run for c in self.checks))

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)
