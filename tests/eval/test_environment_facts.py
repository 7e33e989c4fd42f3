"""`ai-fix eval` runs the hidden tests on the base commit too, and says per row which PASS_TO_PASS tests fail there
in the task's environment: a real release pair (toolz 1.1.0 → 1.2.0 from PyPI), its tests run from the source folder
without installing toolz, so toolz's own `test_has_version` fails on the base commit already ("toolz probably isn't
installed properly", says its comment). The oracle's fix is `automatic`, that test listed apart, never counted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.eval_tasks import eval_cli
from tests.support.pypi_releases import TOOLZ
from tests.support.sandbox import skip_reason

pytestmark = pytest.mark.bwrap

NOT_INSTALLED = "toolz/tests/test_package.py::test_has_version"
ROW = {
    "instance_id": "toolz-1.2.0-uninstalled",
    "problem_statement": TOOLZ.issue,
    "pypi": {
        "name": "toolz",
        "base": TOOLZ.base.version,
        "fixed": TOOLZ.fixed.version,
        "base_sha256": TOOLZ.base.sha256,
        "fixed_sha256": TOOLZ.fixed.sha256,
    },
    "FAIL_TO_PASS": ["toolz/tests/test_itertoolz.py::test_interpose_empty"],
    "PASS_TO_PASS": [NOT_INSTALLED, "toolz/tests/test_itertoolz.py::test_interpose", "toolz/tests/test_utils.py"],
    "checks": [
        {
            "name": "tests",
            "run": "env PYTHONPATH=. PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider toolz/tests",
            "timeout": 300,
        }
    ],
    "setup": [],
}


def test_a_pass_to_pass_test_failing_on_the_base_commit_is_reported_apart(tmp_path: Path) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    (tmp_path / "tasks.jsonl").write_text(json.dumps(ROW) + "\n")
    path = f"{Path(sys.executable).parent}:/usr/bin:/bin"  # the tests' Python, with pytest
    report = eval_cli(tmp_path, str(tmp_path / "tasks.jsonl"), "--model", "oracle", path=path)
    [run] = report["tasks"]
    assert run["outcome"] == "accepted" and run["class"] == "automatic", (run["reason"], run["hidden"])
    hidden = run["hidden"]
    assert hidden["failing_on_base"] == [NOT_INSTALLED] and hidden["pass_to_pass"][NOT_INSTALLED] == "fail"
    assert hidden["fail_to_pass"] == {"toolz/tests/test_itertoolz.py::test_interpose_empty": "pass"}
    assert f"failing on the base commit: `{NOT_INSTALLED}`" in (tmp_path / "out" / "report.md").read_text()
    log = (tmp_path / "out" / "tasks" / ROW["instance_id"] / "oracle" / "hidden.log").read_text()
    assert "# failing on the base commit in this environment" in log
