"""The shipped `pypi-fixes` set itself, through `ai-fix eval` as a user runs it: its sdists come from PyPI
(pinned by sha256 in the set, cached under `.cache/eval-sdists`), each release is made a git repository, and
every run goes through `ai-fix run`'s code path on bwrap. The calibration policies bound the harness: the
`oracle` (the release's own fix) must be accepted with every hidden test passing, `noop` never accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.eval.tasks import load_tasks
from tests.support.eval_tasks import eval_cli
from tests.support.sandbox import skip_reason

pytestmark = pytest.mark.bwrap


def test_the_shipped_pypi_fixes_set_oracle_all_automatic_noop_none_accepted(tmp_path: Path) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    _, tasks = load_tasks("pypi-fixes")
    report = eval_cli(tmp_path, "pypi-fixes", "--model", "oracle", "--model", "noop", "--jobs", "2")
    by_variant = {s["variant"]: s for s in report["summary"]}
    assert by_variant["oracle"]["tasks"] == by_variant["noop"]["tasks"] == len(tasks) == 7
    assert by_variant["oracle"]["errors"] == by_variant["noop"]["errors"] == 0, [t["error"] for t in report["tasks"]]
    oracle = [t for t in report["tasks"] if t["variant"] == "oracle"]
    assert [t["class"] for t in oracle] == ["automatic"] * 7, [(t["instance_id"], t["reason"]) for t in oracle]
    for t in oracle:
        assert set(t["hidden"]["fail_to_pass"].values()) == {"pass"} and set(t["hidden"]["pass_to_pass"].values()) == {
            "pass"
        }
    noop = [t for t in report["tasks"] if t["variant"] == "noop"]
    assert [t["outcome"] for t in noop if t["outcome"] == "accepted"] == []
    assert {t["class"] for t in noop} == {"refused"}
    assert "| `oracle` | 7 |" in (tmp_path / "out" / "report.md").read_text()
