"""The contract's setup and checks bound to one sandbox: what the loop's `Checks` seam runs.

A detected check whose tool the environment lacks (the baseline says `error`: command not found, a
missing module) is set aside as `not_run` with that reason, and later runs leave it out; the other
checks go on. A check the config or the issue names is never set aside for that; any check that runs
Python is, when the repository's own packages would be imported from another copy (`bot.checks.own_copy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.checks.models import CheckResult, CheckRun, SetupReport
from bot.checks.own_copy import not_own_reason, other_copies, own_packages, runs_python
from bot.checks.runner import deadline, run_baseline, run_checks, run_selected
from bot.checks.setup import prepare_environment
from bot.checks.vcs_version import version_env
from bot.contract.models import TaskContract
from bot.sandbox.base import Sandbox
from bot.vocabulary import FAILED


class SandboxChecks:
    def __init__(
        self,
        sandbox: Sandbox,
        contract: TaskContract,
        secrets: Sequence[str],
        setup_env: Mapping[str, str] | None = None,
        *,
        withheld: Sequence[str] = (),
        repo: str = "",
        described: str = "",
    ) -> None:
        self.sandbox, self.contract, self.secrets = sandbox, contract, tuple(secrets)
        self.setup_env = dict(setup_env or {})
        """The setup secrets by name: passed to setup commands only."""
        self.withheld, self.repo = tuple(withheld), repo
        """Setup secrets the host has but does not give to this repository."""
        self.versions = version_env(described)
        """The version VCS plugins would read from git (`described`: the base commit's `git describe`), for setup."""
        self.set_aside: dict[str, CheckResult] = {}
        """Detected checks the environment cannot run, by name, with the baseline's `not_run` result; and any check
        that would import another copy of the project (`bot.checks.own_copy`)."""
        self.report: SetupReport | None = None

    def setup(self, *, offline: bool = False) -> SetupReport:
        self.report = prepare_environment(
            self.sandbox,
            self.contract,
            env=self.setup_env,
            secrets=self.secrets,
            offline=offline,
            withheld=self.withheld,
            repo=self.repo,
            versions=self.versions,
        )
        return self.report

    def baseline(self, commit: str, *, limit_s: float | None = None) -> CheckRun:
        foreign = other_copies(self.sandbox, own_packages(self.sandbox.workspace))
        if foreign:
            reason = not_own_reason(foreign, self.report.problem if self.report else "")
            for check in self.contract.checks:
                if runs_python(check):
                    self.set_aside[check.name] = CheckResult(
                        name=check.name, command=check.run, status="not_run", reason=reason
                    )
        wanted = [c for c in self.contract.checks if c.name not in self.set_aside]
        run = run_baseline(self.sandbox, wanted, commit=commit, secrets=self.secrets, until=deadline(limit_s))
        ran = {r.name: r for r in run.results}
        run.results = [self.set_aside.get(c.name) or ran[c.name] for c in self.contract.checks]
        detected = {c.name for c in self.contract.checks if c.origin == "detected"}
        for i, result in enumerate(run.results):
            if result.status == "error" and result.name in detected:
                run.results[i] = self.set_aside[result.name] = result.model_copy(
                    update={"status": "not_run", "reason": f"the environment cannot run it: {result.reason}"}
                )
        return run

    def run(
        self, names: list[str] | None, *, commit: str, changed_files: list[str], limit_s: float | None = None
    ) -> CheckRun:
        wanted = [c.name for c in self.contract.checks] if names is None else names
        return run_checks(
            self.sandbox,
            self.contract.checks,
            names=[n for n in wanted if n not in self.set_aside],
            commit=commit,
            secrets=self.secrets,
            changed_files=changed_files,
            until=deadline(limit_s),
        )

    def run_selected(
        self, names: list[str], files: list[str], *, commit: str, limit_s: float | None = None
    ) -> CheckRun:
        checks = [c for c in self.contract.checks if c.name in names and c.name not in self.set_aside]
        return run_selected(self.sandbox, checks, files, commit=commit, secrets=self.secrets, until=deadline(limit_s))


class Unavailable:
    """The `Checks` of a job whose sandbox could not be opened: setup reports why, nothing else runs."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def setup(self, *, offline: bool = False) -> SetupReport:
        return SetupReport(status=FAILED, problem=self.reason)

    def baseline(self, commit: str, *, limit_s: float | None = None) -> CheckRun:
        return CheckRun(commit=commit)

    def run(
        self, names: list[str] | None, *, commit: str, changed_files: list[str], limit_s: float | None = None
    ) -> CheckRun:
        return CheckRun(commit=commit)

    def run_selected(
        self, names: list[str], files: list[str], *, commit: str, limit_s: float | None = None
    ) -> CheckRun:
        return CheckRun(commit=commit)
