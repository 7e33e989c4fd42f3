"""Setup with network never runs files the model wrote.

Under `sandbox.network: setup` the setup commands reach the network. In a later round (`/agent retry`,
a review) the job's tree is the pull request's branch, and a resumed job's tree holds the model's
edits: a `setup.py`, `pyproject.toml` or `Makefile` changed there would run with network. So when
the tree differs from the evidence base (the pull request's original base), setup runs with the
base commit's files laid over the tree, and the environment it makes stays when the tree is put
back; then, if the change touched a setup input (`sandbox.setup_inputs`), setup runs again on the
tree's own files as ordinary commands: no network, no package caches, no setup secrets, no snapshot.
That second run may fail (a new dependency cannot be downloaded offline); the checks then run with
the environment of the base files and the report says so. The snapshot key is taken on the base
files too, so a later round reuses round 1's snapshot.
"""

from __future__ import annotations

from bot.checks.models import SetupReport
from bot.contract.globs import glob_match
from bot.contract.models import TaskContract
from bot.loop.harness import Harness, Workspace
from bot.vocabulary import FAILED


def model_files(contract: TaskContract, ws: Workspace) -> list[str]:
    """The paths the tree changed since the evidence base, when setup would have network there; else []."""
    if not contract.setup or contract.sandbox.network != "setup":
        return []
    return [f.path for f in ws.stats(against=ws.evidence_base).files]


def prepare_setup(h: Harness) -> SetupReport:
    """Setup (or its snapshot) with network on the base commit's files, then offline on the change's setup inputs."""
    contract, ws = h.contract, h.workspace
    changed = model_files(contract, ws)
    if not changed:
        return h.checks.setup()
    base = ws.evidence_base
    with ws.laid_over(base):
        report = h.checks.setup().model_copy(update={"on_base": base})
    inputs = [p for p in changed if any(glob_match(p, g) for g in contract.sandbox.setup_inputs)]
    if report.status == FAILED or not inputs:
        return report
    again = h.checks.setup(offline=True)
    return report.model_copy(
        update={
            "changed_inputs": inputs,
            "offline": "ran" if again.status == "ran" else FAILED,
            "offline_problem": again.problem,
            "duration_s": report.duration_s + again.duration_s,
        }
    )
