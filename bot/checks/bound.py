"""The contract's setup and checks bound to one sandbox: what the loop's `Checks` seam runs."""

from __future__ import annotations

from collections.abc import Sequence

from bot.checks.classify import environment_error
from bot.checks.models import CheckRun
from bot.checks.runner import deadline, run_baseline, run_checks, run_selected, run_setup
from bot.contract.models import TaskContract
from bot.markdown import first_line
from bot.redact import redact
from bot.sandbox.base import Sandbox


class SandboxChecks:
    def __init__(self, sandbox: Sandbox, contract: TaskContract, secrets: Sequence[str]) -> None:
        self.sandbox, self.contract, self.secrets = sandbox, contract, tuple(secrets)

    def setup(self) -> str | None:
        """Run the setup commands; what failed and why (redacted), or None when all succeeded."""
        results = run_setup(self.sandbox, self.contract.setup, self.contract.sandbox)
        if not results or results[-1].exit_code == 0:
            return None
        last, command = results[-1], self.contract.setup[len(results) - 1]
        output = redact(last.output, self.secrets)
        why = environment_error(output) or ("timed out" if last.timed_out else first_line(output[-500:]))
        return f"setup command `{command}` failed (exit {last.exit_code}): {why}"

    def baseline(self, commit: str, *, limit_s: float | None = None) -> CheckRun:
        until = deadline(limit_s)
        return run_baseline(self.sandbox, self.contract.checks, commit=commit, secrets=self.secrets, until=until)

    def run(
        self, names: list[str] | None, *, commit: str, changed_files: list[str], limit_s: float | None = None
    ) -> CheckRun:
        return run_checks(
            self.sandbox,
            self.contract.checks,
            names=names,
            commit=commit,
            secrets=self.secrets,
            changed_files=changed_files,
            until=deadline(limit_s),
        )

    def run_selected(
        self, names: list[str], files: list[str], *, commit: str, limit_s: float | None = None
    ) -> CheckRun:
        checks = [c for c in self.contract.checks if c.name in names]
        return run_selected(self.sandbox, checks, files, commit=commit, secrets=self.secrets, until=deadline(limit_s))
