"""Reading task rows: SWE-bench's format, the PyPI form, the shipped set, and the errors that say what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.eval.tasks import load_tasks, parse_tasks, shipped_sets

SWE_ROW = {
    "instance_id": "astropy__astropy-12907",
    "repo": "astropy/astropy",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "problem_statement": "Modeling's `separability_matrix` does not compute separability correctly for nested models",
    "patch": "diff --git a/a.py b/a.py\n",
    "test_patch": "diff --git a/t.py b/t.py\n",
    "FAIL_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]',
    "PASS_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_coord_matrix"]',
    "version": "4.3",
    "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
    "hints_text": "",
    "created_at": "2022-03-03T15:14:54Z",
}


def test_a_published_swe_bench_row_reads_with_its_json_encoded_lists() -> None:
    [task] = parse_tasks(json.dumps(SWE_ROW), "lite.jsonl")
    assert task.fail_to_pass == ["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]
    assert task.pass_to_pass == ["astropy/modeling/tests/test_separable.py::test_coord_matrix"]
    assert task.pypi is None and task.title.startswith("Modeling's")


def test_every_bad_line_is_named_with_its_field() -> None:
    rows = [
        {**SWE_ROW, "FAIL_TO_PASS": "not json"},
        {**SWE_ROW, "instance_id": "b", "test_patch": ""},
        {**SWE_ROW, "instance_id": "../escape"},
        SWE_ROW,
        SWE_ROW,
    ]
    with pytest.raises(ConfigError) as err:
        parse_tasks("\n".join(json.dumps(r) for r in rows), "mine.jsonl")
    text = str(err.value)
    assert "mine.jsonl line 1: FAIL_TO_PASS: a list, or a JSON-encoded list of test ids" in text
    assert "line 2: a task needs `repo`, `base_commit` and `test_patch`, or a `pypi` release pair" in text
    assert "line 3: instance_id: String should match pattern" in text
    assert "line 5: instance_id 'astropy__astropy-12907' appears twice" in text


def test_an_empty_file_and_a_missing_one_say_what_to_pass(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ConfigError, match="holds no task"):
        load_tasks(str(tmp_path / "empty.jsonl"))
    with pytest.raises(ConfigError, match="pass a JSONL file or a shipped set \\(pypi-fixes\\)"):
        load_tasks(str(tmp_path / "absent.jsonl"))


def test_the_shipped_set_pins_real_releases_of_six_projects() -> None:
    assert list(shipped_sets()) == ["pypi-fixes"]
    name, tasks = load_tasks("pypi-fixes")
    assert name == "pypi-fixes" and len(tasks) >= 6
    projects = set()
    for task in tasks:
        assert task.pypi is not None and task.pypi.base != task.pypi.fixed
        assert task.instance_id == f"{task.pypi.name}-{task.pypi.fixed}" and task.fail_to_pass and task.checks
        assert all("::" in t for t in [*task.fail_to_pass, *task.pass_to_pass])
        projects.add(task.pypi.name)
    assert len(projects) >= 4 and not projects & {"toolz", "boltons", "more-itertools"}
