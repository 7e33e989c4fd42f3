"""Never test another copy of the project: a project that could not be installed is tested on its own source or not at
all, in a real bwrap sandbox with a real pip (offline, from the pinned wheels of `tests.support.pypi_project`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.checks.bound import SandboxChecks
from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.files import LocalRepoFiles
from bot.contract.models import Check, TaskContract
from bot.sandbox.base import SandboxJob
from bot.sandbox.select import open_sandbox
from tests.support.pypi_project import fetch
from tests.support.repos import make_repo
from tests.support.sandbox import open_test_sandbox, python_paths, skip_reason

pytestmark = pytest.mark.bwrap

OWN = {
    "src/dateutil/__init__.py": "MARK = 'the repository'\n",
    "tests/test_mark.py": "import dateutil\n\n\ndef test_mark():\n    assert dateutil.MARK == 'the repository'\n",
}
"""A src-layout project whose package has the name of one installed where the tests run (python-dateutil)."""
BROKEN_BUILD = (
    "[project]\nname = 'python-dateutil'\nversion = '0'\n[project.optional-dependencies]\ntest = ['freezegun']\n"
    "[build-system]\nrequires = ['no-such-build-backend-for-ai-fix']\nbuild-backend = 'nowhere'\n"
)
"""It cannot be installed; its test dependency (freezegun) brings the released python-dateutil along."""


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")


def test_a_check_that_would_import_the_host_s_copy_does_not_run(tmp_path: Path) -> None:
    host = Path(sys.prefix).resolve()
    assert (host / "lib").exists() and any(host.glob("lib/python3*/site-packages/dateutil/__init__.py"))
    ws = make_repo(tmp_path / "ws", OWN)
    task = TaskContract(
        status="ready", checks=[Check(name="pytest", run="python -m pytest -q tests", origin="detected")]
    )
    box = open_test_sandbox("bwrap", ws)
    try:
        baseline = SandboxChecks(box, task, []).baseline("base")
    finally:
        box.close()
    [result] = baseline.results
    assert result.status == "not_run", result.output
    assert result.reason.startswith(f"it would import dateutil from {host}/lib/python3")
    assert "another copy than the repository's own" in result.reason
    assert 'setup: ["python -m pip install -e ."]' in result.reason


def test_a_project_that_cannot_be_installed_is_tested_on_its_own_source_first(tmp_path: Path) -> None:
    wheels = fetch() / "wheels"
    repo = make_repo(tmp_path / "repo", {**OWN, "pyproject.toml": BROKEN_BUILD})
    contract = build_contract(snapshot_from_markdown("# x\n\n- a\n", str(repo)), LocalRepoFiles(repo))
    assert contract.setup_origin == "detected" and contract.sandbox.network == "setup"
    ws = make_repo(tmp_path / "ws", {**OWN, "pyproject.toml": BROKEN_BUILD})
    box = open_sandbox(
        "bwrap",
        ws,
        contract.sandbox,
        env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_CONFIG_FILE": "/dev/null"},
        ro_paths=[wheels, *python_paths()],
        job=SandboxJob(commands=contract.commands()),
    )
    try:
        checks = SandboxChecks(box, contract, [])
        report = checks.setup()
        where = box.exec("python -c 'import dateutil, importlib.metadata as m; print(dateutil.__file__)'", timeout=60)
        other = box.exec(
            "python -c 'import importlib.metadata as m; print(m.version(\"python-dateutil\"))'", timeout=60
        )
        baseline = checks.baseline("base")
    finally:
        box.close()
    assert report.status == "ran", report.describe()
    [note] = [n for n in report.notes if "could not install the project" in n]
    assert "no-such-build-backend-for-ai-fix" in note, "pip's own error line says why"
    assert "src/ is first on the import path" in note
    assert other.output.strip() == "4.0.0", "the released copy is installed too (freezegun needs it)"
    assert where.output.strip() == "/workspace/src/dateutil/__init__.py", where.output
    assert [(r.name, r.status) for r in baseline.results] == [("pytest", "pass")], baseline.results[0].output
