"""`ai-fix eval` on rows in SWE-bench's published format, built from the shipped set: each release pair made a git
repository and mirrored under `--repos`, the gold fix in `patch`, the hidden tests in `test_patch`, the id lists
JSON-encoded, and the ids spoiled the way the published lists are (cut at their first space, with progress
markers). The oracle's correct fixes must come out `automatic`, never `incorrect`, with the debris reported
as unmatched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bot.eval.pypi import SdistCache
from bot.eval.repos import prepare
from bot.eval.tasks import EvalTask, load_tasks
from tests.support.eval_tasks import EVAL_CACHE, eval_cli
from tests.support.sandbox import skip_reason

pytestmark = pytest.mark.bwrap

ROWS = ("sqlparse-0.5.2", "tinydb-4.8.2")
"""sqlparse: parametrized ids holding spaces; tinydb: the row docs/local.md shows whole."""
DEBRIS = "[100%]"


def published(test_id: str) -> str:
    """A test id as SWE-bench's log parser writes it: cut at the first space."""
    return test_id.split(" ", 1)[0]


def swe_row(task: EvalTask, repos: Path, work: Path, sdists: SdistCache) -> dict[str, Any]:
    source = prepare(task, repos=None, work=work, fetch=sdists.fetch)
    assert task.pypi is not None
    name = f"pypi/{task.pypi.name}"
    subprocess.run(
        ["git", "clone", "-q", "--mirror", str(source.repo), str(repos / f"{name.replace('/', '__')}.git")], check=True
    )
    p2p = [published(t) for t in task.pass_to_pass]
    p2p[0] += f" {DEBRIS}"  # a progress marker riding along
    return {
        "repo": name,
        "instance_id": f"{task.instance_id}-published",
        "base_commit": source.base_sha,
        "patch": source.patch,
        "test_patch": source.test_patch,
        "problem_statement": task.problem_statement,
        "hints_text": "",
        "version": task.pypi.fixed,
        "FAIL_TO_PASS": json.dumps([published(t) for t in task.fail_to_pass]),
        "PASS_TO_PASS": json.dumps([*p2p, DEBRIS]),
        "checks": [c.model_dump(exclude_none=True) for c in task.checks or []],
    }


def test_published_rows_with_cut_and_debris_ids_are_automatic_for_the_oracle(tmp_path: Path) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    _, shipped = load_tasks("pypi-fixes")
    tasks = [t for t in shipped if t.instance_id in ROWS]
    assert any(" " in t for task in tasks for t in task.pass_to_pass), "a parametrized id holds a space"
    repos = tmp_path / "repos"
    repos.mkdir()
    with SdistCache(EVAL_CACHE, "https://pypi.org/simple") as sdists:
        rows = [swe_row(t, repos, tmp_path / "built", sdists) for t in tasks]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    report = eval_cli(
        tmp_path, str(tmp_path / "tasks.jsonl"), "--model", "oracle", "--repos", str(repos), "--jobs", "2"
    )
    by_task = {t["instance_id"]: t for t in report["tasks"]}
    for row, task in zip(rows, tasks):
        run = by_task[row["instance_id"]]
        assert run["class"] == "automatic", (run["instance_id"], run["reason"], run["hidden"])
        hidden = run["hidden"]
        assert hidden["unmatched"] == [DEBRIS], hidden["unmatched"]
        assert set(hidden["fail_to_pass"].values()) == {"pass"} and set(hidden["pass_to_pass"].values()) == {"pass"}
        cut_ids = {published(t) for t in task.pass_to_pass}
        assert len(hidden["pass_to_pass"]) == len(cut_ids), "every published id but the debris matched a test"
        assert hidden["failing_on_base"] == []
    [spaced] = [r for r in rows if r["instance_id"].startswith("sqlparse")]
    cut = next(t for t in json.loads(spaced["PASS_TO_PASS"]) if t.endswith("[select"))
    assert by_task[spaced["instance_id"]]["hidden"]["pass_to_pass"][cut] == "pass"
    assert f"unmatched: `{DEBRIS}`" in (tmp_path / "out" / "report.md").read_text()
