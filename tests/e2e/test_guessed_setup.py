"""A guessed setup is a guess: `ai-fix run` (the real Anthropic client on the fake Messages API, bwrap) on the
sample repository when ai-fix has to guess the setup, and when the guess cannot work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.runs import DEMO_SCRIPT, config, run_local, sample_files

pytestmark = pytest.mark.bwrap

OFFLINE = config().replace("scope:", "sandbox:\n  network: none\nscope:")
SETUP_PY = "from setuptools import setup\n\nsetup(name='calc', version='1.0', py_modules=['calc'])\n"


def baseline_setup(trace: list[dict[str, object]]) -> dict[str, object]:
    [baseline] = [r for r in trace if r["kind"] == "baseline"]
    setup = baseline["setup"]
    assert isinstance(setup, dict)
    return setup


def test_a_guessed_setup_that_fails_does_not_stop_the_run(tmp_path: Path) -> None:
    # No `setup:`: ai-fix guesses `pip install -r requirements.txt`, which cannot install (no index is reachable).
    files = sample_files(**{".github/ai-fix.yml": config(), "requirements.txt": "no-such-package-for-ai-fix==1.0\n"})
    run = run_local(tmp_path, DEMO_SCRIPT, files=files, settings={"sandbox_env": {"PIP_NO_INDEX": "1"}})
    assert run.result.outcome == "accepted", run.result.reason
    assert len(run.fake.bodies) == len(DEMO_SCRIPT), "the model was reached"
    setup = baseline_setup(run.trace())
    assert (setup["status"], setup["origin"], setup["exit_code"]) == ("failed", "detected", 1)
    assert "-r requirements.txt" in str(setup["failed_command"])
    assert "no-such-package-for-ai-fix" in str(setup["last_lines"])
    assert setup["removed"] == [".ai-fix-env"], "the half-made environment is gone, the checks ran as they are"
    assert "the guessed setup failed after" in run.log and "going on with the checks" in run.log
    pr = (run.out / "pr.md").read_text()
    risks = pr.split("## Known risks", 1)[1].split("\n## ", 1)[0]
    assert (
        "The setup ai-fix guessed failed, `.ai-fix-env/venv/bin/python -m pip install -r requirements.txt` (exit 1)"
        in risks
    )
    not_verified = pr.split("## Not verified", 1)[1].split("\n## ", 1)[0]
    assert "the guessed setup did not run through, so the project was not installed" in not_verified
    evidence = json.loads((run.out / "evidence.json").read_text())
    assert evidence["setup"]["status"] == "failed" and evidence["setup"]["exit_code"] == 1


def test_a_configured_setup_that_fails_still_stops_the_run_before_the_model(tmp_path: Path) -> None:
    files = sample_files(**{".github/ai-fix.yml": config() + "setup:\n  - echo broken >&2; exit 3\n"})
    run = run_local(tmp_path, DEMO_SCRIPT, files=files)
    assert run.result.outcome == "handed_off"
    assert run.result.reason.startswith(
        "environment error during setup: setup command `echo broken >&2; exit 3` failed (exit 3)"
    )
    assert run.fake.bodies == []


def test_offline_a_setup_py_repository_reaches_the_model_and_is_accepted(tmp_path: Path) -> None:
    files = sample_files(**{".github/ai-fix.yml": OFFLINE, "setup.py": SETUP_PY})
    run = run_local(tmp_path, DEMO_SCRIPT, files=files)
    assert run.result.outcome == "accepted", run.result.reason
    contract = run.result.contract
    assert (contract.setup_origin, contract.sandbox.network, len(contract.setup)) == ("detected", "none", 3)
    setup = baseline_setup(run.trace())
    assert setup["status"] == "ran"
    [note] = setup["notes"]
    assert isinstance(note, str) and note.startswith("ai-fix: setup: ")
    assert "without network" in note, "which way the install took is said"
    assert note in run.log
    assert [f.path for f in run.result.diff.files] == ["calc.py"], "the environment stays out of the change"
