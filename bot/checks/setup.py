"""Preparing a job's environment: the contract's setup commands run, or a snapshot of them reused.

The setup key digests what the setup's result depends on: the commands, the names of the setup
secrets (never their values) and the contents of the files `sandbox.setup_inputs` names (lock files,
manifests). A container sandbox that holds a snapshot for that key restores it instead of running
setup; otherwise setup runs with its secrets in its environment only, and what it created in the
workspace is handed to the sandbox to keep for the repository's later jobs. After a setup given
secrets, the sandbox drops what it left outside the workspace, and one that left a secret in the
workspace fails (`bot.checks.setup_leaks`) before any snapshot is kept: so a snapshot never holds a
secret, and one reused need not be searched again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.checks.classify import environment_error
from bot.checks.models import SetupReport
from bot.checks.runner import run_setup
from bot.checks.setup_leaks import Stamp, leak_problem, secret_files, stamps, touched
from bot.contract.globs import glob_match
from bot.contract.models import TaskContract
from bot.contract.pysetup import readable
from bot.contract.pysetup import whole as _whole
from bot.envdir import DEPENDENCY_DIRS, VENV_BIN
from bot.redact import redact
from bot.sandbox.base import ExecResult, Sandbox
from bot.secrets import REPOS_SUFFIX, SETUP_SECRET_PREFIX
from bot.vocabulary import FAILED

KEY_VERSION = "ai-fix setup 2"
"""Bump when what a snapshot holds changes, so older snapshots are not reused."""
NOTE = "ai-fix: "
"""Setup output lines that start so are what a setup command says of itself; the report keeps them."""
LAST_LINES = 20
"""How much of a failed setup command's output the trace and the evidence keep."""
MAX_REASON = 300
MAX_COMMAND = 200
_NOTICE = re.compile(r"^\s*(?:\[notice\]|note:|hint:|warning:|WARNING:|DEPRECATION:)")
_RAISED = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception): ")
_ERROR = re.compile(r"^(?:ERROR|error|Error|fatal|FATAL)\b:?")
_NPM = re.compile(r"^npm (?:ERR!|error) (?!code |A complete log|Log files|\s*$)")
_PIP_WRAPPERS = re.compile(r"subprocess-exited-with-error|metadata-generation-failed|ResolutionImpossible")


def _walk(workspace: Path, *, into_dependencies: bool) -> list[str]:
    """Workspace-relative paths of files and folders, without `.git` (nor installed dependencies unless asked)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(workspace):
        rel = os.path.relpath(dirpath, workspace)
        dirnames[:] = sorted(d for d in dirnames if d != ".git" and (into_dependencies or d not in DEPENDENCY_DIRS))
        prefix = "" if rel == "." else f"{rel}/"
        found += [f"{prefix}{name}" for name in (*dirnames, *sorted(filenames))]
    return found


def setup_inputs(workspace: Path, globs: list[str]) -> list[str]:
    """The files setup depends on, as found in the workspace (repository-relative, sorted)."""
    return sorted(p for p in _walk(workspace, into_dependencies=False) if any(glob_match(p, g) for g in globs))


def setup_key(contract: TaskContract, workspace: Path) -> str:
    """A digest of everything the setup's result depends on; "" when there is no setup."""
    if not contract.setup:
        return ""
    h = hashlib.sha256(KEY_VERSION.encode())
    for part in (*contract.setup, "\0secrets", *contract.setup_secrets, "\0inputs"):
        h.update(part.encode() + b"\0")
    for rel in setup_inputs(workspace, contract.sandbox.setup_inputs):
        path = workspace / rel
        if path.is_file() and not path.is_symlink():
            h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def created(before: set[str], after: list[str]) -> list[str]:
    """The topmost paths in `after` that were not in `before` (a new folder stands for everything in it)."""
    tops: set[str] = set()
    for path in after:
        parts = path.split("/")
        if path not in before and not any("/".join(parts[:i]) in tops for i in range(1, len(parts))):
            tops.add(path)
    return sorted(tops)


def _withheld_problem(contract: TaskContract, withheld: Sequence[str], repo: str) -> str:
    """Why setup may not run with the secrets it names: one is not given to this repository ("" when all are)."""
    refused = [n for n in contract.setup_secrets if n in withheld]
    if not refused:
        return ""
    names = ", ".join(refused)
    variables = " and ".join(f"{SETUP_SECRET_PREFIX}{n}{REPOS_SUFFIX}" for n in refused)
    return (
        f"the setup secret{'s' if len(refused) > 1 else ''} {names} (setup_secrets in .github/ai-fix.yml) "
        f"{'are' if len(refused) > 1 else 'is'} not given to {repo or 'this repository'}: the operator names "
        f"the repositories each secret goes to in {variables} (owner/repo or owner/*, comma-separated); "
        "nothing was passed to setup"
    )


def _missing_problem(contract: TaskContract, env: Mapping[str, str]) -> str:
    """Why setup cannot run: a secret it names is not set on this host ("" when all are)."""
    missing = [n for n in contract.setup_secrets if n not in env]
    if not missing:
        return ""
    names = ", ".join(f"{SETUP_SECRET_PREFIX}{n}" for n in missing)
    return (
        f"the setup secret{'s' if len(missing) > 1 else ''} {', '.join(missing)} (setup_secrets in "
        f".github/ai-fix.yml) {'are' if len(missing) > 1 else 'is'} not provided; set {names} on the ai-fix host"
    )


def _kept_clean(
    sandbox: Sandbox, base: SetupReport, stamped: Mapping[str, Stamp], given: Mapping[str, str], secrets: tuple[str, ...],
    outputs: list[str], took: float,
) -> tuple[SetupReport, list[str]]:  # fmt: skip
    """After a setup given secrets: failed when a file it wrote holds one; else what it wrote outside the
    environment folders removed. The report, and the outputs left."""
    searching = time.monotonic()
    wrote = touched(sandbox.workspace, stamped)
    leaks = secret_files(sandbox.workspace, wrote, given)
    if leaks:  # whatever else happened: neither a snapshot, the checks nor the model may see them
        update = {"problem": leak_problem(leaks, secrets), "secret_files": sorted(leaks), "duration_s": took}
        return base.model_copy(update={"status": FAILED, **update}), outputs
    # Outside the environment folders nothing a secret-bearing setup wrote is kept: no search follows every
    # encoding, and there the checks and the model would read it.
    withheld = [p for p in outputs if not DEPENDENCY_DIRS & set(p.split("/"))]
    remove(sandbox.workspace, withheld)
    update = {"searched": len(wrote), "search_s": time.monotonic() - searching, "withheld": withheld}
    return base.model_copy(update=update), [p for p in outputs if p not in withheld]


def _failed(
    sandbox: Sandbox, contract: TaskContract, base: SetupReport, results: list[ExecResult],
    secrets: tuple[str, ...], outputs: list[str], took: float,
) -> SetupReport:  # fmt: skip
    """The report of a setup whose last command failed; a guess's outputs removed."""
    last, command = results[-1], contract.setup[len(results) - 1]
    output = redact(last.output, secrets)
    error = error_line(output)
    why = environment_error(output, missing=sandbox.missing_command) or ("timed out" if last.timed_out else error)
    failed = base.model_copy(
        update={
            "status": FAILED,
            "problem": f"setup command `{shortened(command)}` failed (exit {last.exit_code}): {why}",
            "duration_s": took,
            "failed_command": command,
            "exit_code": last.exit_code,
            "error": error,
            "fix": config_line(command) if contract.setup_origin == "detected" else "",
            "last_lines": "\n".join(output.rstrip().splitlines()[-LAST_LINES:]),
        }
    )
    if failed.guess_failed:
        remove(sandbox.workspace, outputs)
        failed = failed.model_copy(update={"removed": outputs})
    return failed


def prepare_environment(
    sandbox: Sandbox,
    contract: TaskContract,
    *,
    env: Mapping[str, str],
    secrets: tuple[str, ...],
    offline: bool = False,
    withheld: Sequence[str] = (),
    repo: str = "",
    versions: Mapping[str, str] | None = None,
) -> SetupReport:
    """Reuse the setup's snapshot, or run setup (and keep a snapshot); what happened, and how long it took.

    `offline`: the tree holds files the model may have written, so the commands run as ordinary ones
    (no network, no package caches, no setup secrets) and no snapshot is reused or kept. After setup
    given secrets, what it created or changed is searched for them: one found fails the setup (even
    a guessed one, which would otherwise go on) naming the paths and the secrets. `versions`: the variables
    that give VCS version plugins the base commit's version (`bot.checks.vcs_version`), never searched as secrets.
    """
    began = time.monotonic()
    base = SetupReport(status="none", origin=contract.setup_origin, commands=len(contract.setup))
    if not contract.setup:
        return base
    # Before a snapshot is reused: one made with the secret must not reach a repository no longer named for it.
    if not offline and (problem := _withheld_problem(contract, withheld, repo)):
        return base.model_copy(update={"status": FAILED, "problem": problem})
    if not offline and (snapshot := sandbox.restore_setup()) is not None:
        return base.model_copy(
            update={"status": "reused", "snapshot": snapshot, "duration_s": time.monotonic() - began}
        )
    if not offline and (problem := _missing_problem(contract, env)):
        return base.model_copy(update={"status": FAILED, "problem": problem})
    before = set(_walk(sandbox.workspace, into_dependencies=True))
    given = {} if offline else dict(env)
    stamped = stamps(sandbox.workspace) if given else {}
    results = run_setup(sandbox, contract.setup, env={**(versions or {}), **given}, network=not offline)
    if given:
        sandbox.forget_setup()
    took = time.monotonic() - began
    outputs = created(before, _walk(sandbox.workspace, into_dependencies=True))
    if given:
        base, outputs = _kept_clean(sandbox, base, stamped, given, secrets, outputs, took)
        if base.status == FAILED:
            return base
    notes = [line.strip() for r in results for line in redact(r.output, secrets).splitlines() if line.startswith(NOTE)]
    base = base.model_copy(update={"notes": notes})
    if results and results[-1].exit_code != 0:
        return _failed(sandbox, contract, base, results, secrets, outputs, took)
    saved = "" if offline else sandbox.save_setup(outputs) or ""
    return base.model_copy(update={"status": "ran", "snapshot": saved, "duration_s": time.monotonic() - began})


def error_line(output: str) -> str:
    """The line of a failed command's output that says what went wrong, whole: an exception's line, else the first
    `ERROR:` line (pip's resolver explains there, then repeats itself), else the last line that is not a notice."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not _NOTICE.match(line)]
    raised = [line for line in lines if _RAISED.search(line)]
    errors = [line for line in lines if (_ERROR.match(line) or _NPM.match(line)) and not _PIP_WRAPPERS.search(line)]
    return _whole(raised[-1] if raised else errors[0] if errors else lines[-1] if lines else "no output", MAX_REASON)


def shortened(command: str) -> str:
    """A setup command as a person reads it, cut at a word boundary when long."""
    return _whole(readable(command), MAX_COMMAND)


def config_line(command: str) -> str:
    """The `.github/ai-fix.yml` line that replaces a guessed setup, starting from the command that failed."""
    core = shortened(command).replace(f"{VENV_BIN}/python", "python").removesuffix(" …")
    return f"setup: [{json.dumps(core)}]"


def remove(workspace: Path, paths: list[str]) -> None:
    """Delete what a failed guessed setup made (a half-made environment would hide the one the checks had)."""
    for rel in paths:
        path = workspace / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
