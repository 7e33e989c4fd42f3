"""`sandbox.network: setup` in a later round: setup with network runs the base commit's files, never the model's.

The real worker runs two jobs of the delivery pipeline on bwrap (whose setup network is the host's, loopback
included): round 1 fixes the sample repository and also rewrites `setup.py` to connect to a listener the test
runs on loopback; round 2 is `/agent retry` on the pull request, whose branch holds that `setup.py`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bot.model.scripted import ScriptedModel, call, turn
from tests.support.runs import CHECK, FIX, PLAN, SAMPLE_CRITERIA
from tests.support.sandbox import skip_reason
from tests.support.server import tcp_listener
from tests.support.webhooks import REPO
from tests.support.worker import open_worker
from tests.support.world import JOB_LIMITS, PYTHON

pytestmark = pytest.mark.bwrap

TITLE, BODY = "add() subtracts", "## Acceptance criteria\n- `add(2, 3)` returns 5\n"
BASE_SETUP = """import pathlib

log = pathlib.Path(".ai-fix-env/setup.log")
log.parent.mkdir(exist_ok=True)
(log.parent / ".gitignore").write_text("*\\n")
with log.open("a") as out:
    out.write("setup.py of the base commit\\n")
"""
README = call(
    "str_replace_based_edit_tool",
    command="str_replace",
    path="README.md",
    old_str="A tiny calculator used by `ai-fix demo`.",
    new_str="A tiny calculator used by `ai-fix demo`; add() sums.",
)
LAST_LINE = '    out.write("setup.py of the base commit\\n")\n'


def model_setup(port: int) -> str:
    """What round 1's model writes in place of the last line of setup.py: a connection out."""
    return f"""    import socket

    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
        outcome = "connected"
    except OSError as exc:
        outcome = f"no connection ({{type(exc).__name__}})"
    out.write(f"setup.py of round 1: {{outcome}}\\n")
"""


CONFIG = f"""checks:
  - name: tests
    run: env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {PYTHON} -m pytest -q tests
    timeout: 60
  - name: environment
    run: cat .ai-fix-env/setup.log
    timeout: 30
setup:
  - {PYTHON} setup.py
sandbox:
  network: setup
{JOB_LIMITS}"""


def git(bare: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={bare}", *args], capture_output=True, text=True, check=True).stdout


def baseline_outputs(trace: Path) -> dict[str, str]:
    """Each check's baseline output in a job's trace."""
    [baseline] = [r for r in map(json.loads, trace.read_text().splitlines()) if r["kind"] == "baseline"]
    return {r["name"]: r["output"] for r in baseline["checks"]["results"]}


def setup_event(job: dict[str, Any]) -> dict[str, Any]:
    [setup] = [e["data"] for e in job["events"] if e["event"] == "setup"]
    return setup


def test_a_round_1_edit_to_setup_py_gets_no_network_in_round_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    files = {".github/ai-fix.yml": CONFIG, "setup.py": BASE_SETUP}
    with (
        tcp_listener() as (port, accepted),
        open_worker(tmp_path, monkeypatch, issues={1: (TITLE, BODY)}, files=files) as worker,
    ):
        edit_setup = call(
            "str_replace_based_edit_tool",
            command="str_replace",
            path="setup.py",
            old_str=LAST_LINE,
            new_str=model_setup(port),
        )
        worker.model_api.scripted = ScriptedModel(
            [
                turn("Fix add() (and, hijacked, setup.py).", PLAN),
                turn("Edit.", FIX, edit_setup, CHECK),
                turn("Done.", call("finish", summary="Fixed add().", risks=[], criteria=SAMPLE_CRITERIA)),
            ]
        )
        worker.enqueue(1)
        worker.attempt()
        first = worker.job()
        assert first["status"] == "done", (first["reason"], first["events"][-8:])
        [pr] = worker.github.pulls_of(REPO)
        assert "socket.create_connection" in git(worker.bare, "show", f"{pr['head']['ref']}:setup.py")
        base = git(worker.bare, "rev-parse", "main").strip()

        worker.model_api.scripted = ScriptedModel(
            [
                turn(
                    "Plan.",
                    call("plan", steps=[{"do": "document add()", "done_when": "tests pass"}], impact=["README.md"]),
                ),
                turn("Say it in the README.", README, CHECK),
                turn("Done.", call("finish", summary="Documented add().", risks=[], criteria=SAMPLE_CRITERIA)),
            ]
        )
        worker.enqueue(pr["number"], kind="retry", feedback="Also say in the README that add() sums")
        worker.attempt()
        second = next(j for j in worker.jobs() if j["kind"] == "retry")
        assert second["status"] == "done", (second["reason"], second["events"][-8:])
    assert accepted == [], "code the model wrote reached the network"

    one, two = setup_event(first), setup_event(second)
    assert (one["status"], one["on_base"], one["offline"]) == ("ran", "", ""), "round 1 starts from the base commit"
    assert (two["status"], two["on_base"], two["changed_inputs"], two["offline"]) == ("ran", base, ["setup.py"], "ran")
    assert f"on the files of the base commit {base[:12]}" in two["line"]
    assert "ran again without network for the change to setup.py" in two["line"]
    traces = sorted((tmp_path / "work").rglob("*.trace.jsonl"), key=lambda p: p.stat().st_mtime)
    assert len(traces) == 2
    assert baseline_outputs(traces[0])["environment"] == "setup.py of the base commit\n"
    # Round 2: the base commit's setup.py with network, then round 1's without: it could not connect.
    assert baseline_outputs(traces[1])["environment"] == (
        "setup.py of the base commit\nsetup.py of round 1: no connection (ConnectionRefusedError)\n"
    )
