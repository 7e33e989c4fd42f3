"""A real project, as a new user brings it: structlog 24.4.0's PyPI source release made a git repository, no
`.github/ai-fix.yml`, a Python on PATH that has another structlog installed, no ruff to be had (mypy comes with the
project's typing extra and finds errors the release already had).
`ai-fix run` (the real Anthropic client on the fake Messages API, a scripted model) on bwrap, with the
dependencies coming from a local wheel directory (see tests/support/pypi_project.py).
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from bot.commands.run import execute
from bot.model.scripted import ScriptedModel, call, turn
from bot.settings import load_settings
from tests.support.model import anthropic_model, serve_fake_api
from tests.support.pypi_project import BUGGY_FILE, fetch, host_python, project_repo
from tests.support.sandbox import skip_reason

pytestmark = pytest.mark.bwrap

ISSUE = """# warn() is logged with the level `warn` instead of `warning`

`structlog.stdlib.add_log_level(None, "warn", {})` gives `{"level": "warn"}`; the standard library calls it `warning`.

## Acceptance criteria
- `map_method_name("warn")` returns `"warning"`
"""
PINNED_TEST = "tests/test_stdlib.py::TestAddLogLevel::test_log_level_alias_normalized[warn-warning]"
SCRIPT = [
    turn(
        "The alias table maps warn to itself.",
        call(
            "plan",
            steps=[{"do": "map warn to warning", "done_when": "pytest passes"}],
            impact=[BUGGY_FILE],
        ),
    ),
    turn(
        "Fix the alias.",
        call(
            "str_replace_based_edit_tool",
            command="str_replace",
            path=BUGGY_FILE,
            old_str='        return "warn"\n',
            new_str='        return "warning"\n',
        ),
    ),
    turn("Verify.", call("finish", summary="warn is mapped to warning again.", risks=[])),
]


def test_setup_is_detected_the_baseline_tests_the_repository_and_a_missing_linter_does_not_stop_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    wheels = fetch() / "wheels"
    host_bin = host_python(tmp_path)
    repo = project_repo(tmp_path)
    # The user's shell: its python3 has the released structlog, where warn is mapped right; no ruff, no mypy.
    monkeypatch.setenv("PATH", f"{host_bin}:/usr/bin:/bin")
    released = subprocess.run(
        [host_bin / "python3", "-c", "import structlog._log_levels as m; print(m.map_method_name('warn'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert released.stdout.strip() == "warning"
    settings = load_settings(
        work_dir=tmp_path / "work",
        sandbox_env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)},
        sandbox_ro_paths=[wheels],
    )
    log = io.StringIO()
    with serve_fake_api(ScriptedModel(list(SCRIPT))) as (fake, url):
        result = execute(
            ISSUE,
            repo,
            tmp_path / "out",
            settings=settings,
            model=lambda _choice: anthropic_model(url),
            model_name="claude-haiku-4-5",
            sandbox_kind="bwrap",
            stream=log,
        )
    contract = result.contract
    assert contract.setup_origin == "detected" and contract.sandbox.network == "setup"
    # The project's own environments: tox's tests and mypy environments' extras and coverage (ci.yml's tox-uv is
    # tox's plugin, not the tests'); mypy comes with the typing extra, so only ruff is installed apart, at
    # the version of the project's pre-commit hook.
    assert [command.split(" > .ai-fix-env/install.log", 1)[0] for command in contract.setup[1:]] == [
        ".ai-fix-env/venv/bin/python -m pip install -e '.[tests,typing]' 'coverage[toml]'",
        ".ai-fix-env/venv/bin/python -m pip install ruff==0.5.2 || echo 'ai-fix: ruff==0.5.2 could not be installed; the ruff check will not run'",
    ]
    assert [(c.name, c.origin) for c in contract.checks] == [
        ("pytest", "detected"),
        ("ruff", "detected"),
        ("mypy", "detected"),
    ]

    # The baseline ran the repository's own code: the planted bug fails its test (the host's structlog has no bug).
    assert result.baseline is not None
    pytest_base, ruff_base, mypy_base = result.baseline.results
    assert pytest_base.status == "fail", pytest_base.output[-2000:]
    assert PINNED_TEST in {t.id for t in pytest_base.tests if t.status == "fail"}
    assert ruff_base.status == "not_run", ruff_base.output[-2000:]
    assert "command not found: ruff" in ruff_base.reason and "not on this host's PATH" in ruff_base.reason
    # mypy runs, the project's mypy environment installed it; today's mypy finds errors the release already had.
    assert mypy_base.status == "fail" and "Found 10 errors in 2 files" in mypy_base.output, mypy_base.output[-2000:]

    # The run went on with the checks that can run and ended with an accepted fix: mypy's errors are the base's.
    assert result.outcome == "accepted", result.reason
    assert "but for what already failed on the base commit" in result.reason
    assert result.final is not None
    assert [(r.name, r.status) for r in result.final.results] == [("pytest", "pass"), ("mypy", "fail")]
    assert len(fake.bodies) == len(SCRIPT)
    pr = (tmp_path / "out" / "pr.md").read_text()
    not_verified = pr.split("## Not verified", 1)[1].split("##", 1)[0]
    assert "`ruff`: the environment cannot run it: command not found: ruff" in not_verified
    assert "mypy" not in not_verified, not_verified
    records = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").read_text().splitlines()]
    [baseline] = [r for r in records if r["kind"] == "baseline"]
    assert baseline["setup"]["status"] == "ran" and baseline["setup"]["origin"] == "detected"
    assert "setup: ran 3 detected commands in" in log.getvalue()
    assert "baseline: ruff not_run (the environment cannot run it: command not found: ruff" in log.getvalue()
    # The environment stayed out of the change.
    assert result.diff.files and [f.path for f in result.diff.files] == [BUGGY_FILE]
