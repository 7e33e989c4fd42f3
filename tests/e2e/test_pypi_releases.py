"""Real bugs, fixed as their projects fixed them: three PyPI source releases made git repositories, each run with
`ai-fix run` (the real Anthropic client on the fake Messages API, a scripted model) on bwrap.

The scripted model applies the next release's own change (the test it added, then the code change; see
tests/support/pypi_releases.py, which checks each edit against both sdists), so what is under test is ai-fix,
not a made-up bug: with `sandbox.network: none` and no `setup:` it has to guess an offline setup that works
for a flat layout (toolz), a src layout (iniconfig) and a setup.py-only project (inflection), show the added
test failing on the base code, and accept the change. For the src layout the Python on PATH has the fixed
iniconfig installed: were the tests importing it instead of the repository's `src/`, the added tests would
pass on the base code and nothing would be reproduced.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.commands.run import execute
from bot.model.scripted import ScriptedModel
from bot.settings import load_settings
from tests.support.model import anthropic_model, serve_fake_api
from tests.support.pypi_releases import (
    INFLECTION,
    RELEASES,
    TOOLZ,
    Release,
    host_python,
    project_repo,
    released_files,
    released_text,
    script,
)
from tests.support.sandbox import skip_reason

pytestmark = pytest.mark.bwrap


def test_each_scripted_edit_is_the_next_release_s_own_change() -> None:
    for release in RELEASES:
        for edit in (*release.test_edits, *release.fix_edits):
            assert released_text(release.base, edit.path).count(edit.old) == 1, (release.base.file, edit.old)
            assert edit.new in released_text(release.fixed, edit.path), (release.fixed.file, edit.new)
        files = released_files(release.base)
        assert {release.test_file, release.fixed_file} <= files, "the sdist ships the code and its tests"
    assert "pyproject.toml" not in released_files(INFLECTION.base) and "setup.py" in released_files(INFLECTION.base)
    assert "pyproject.toml" in released_files(TOOLZ.base) and not any(
        f.startswith("src/") for f in released_files(TOOLZ.base)
    )


@pytest.mark.parametrize("release", RELEASES, ids=[f"{r.layout}-{r.base.name}-{r.base.version}" for r in RELEASES])
def test_a_real_release_s_bug_is_fixed_with_a_guessed_offline_setup(
    release: Release, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    repo = project_repo(release, tmp_path)
    if release.host:
        # The user's shell: its python has pytest and the next release installed, where the bug is fixed. It is the
        # only Python on PATH with pytest, so the sandbox's checks see its packages: only the repository's `src/`,
        # put before them, makes the added tests fail on the base code.
        host_bin = host_python(release, tmp_path)
        installed = subprocess.run(
            [host_bin / "python", "-c", f"import importlib.metadata as m; print(m.version({release.base.name!r}))"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert installed.stdout.strip() == release.fixed.version
    else:
        host_bin = Path(sys.executable).parent
    monkeypatch.setenv("PATH", f"{host_bin}:/usr/bin:/bin")
    turns = script(release)
    log = io.StringIO()
    with serve_fake_api(ScriptedModel(list(turns))) as (fake, url):
        result = execute(
            release.issue,
            repo,
            tmp_path / "out",
            settings=load_settings(work_dir=tmp_path / "work"),
            model=lambda _choice: anthropic_model(url),
            model_name="claude-haiku-4-5",
            sandbox_kind="bwrap",
            stream=log,
        )
    assert result.outcome == "accepted", f"{result.reason}\n{log.getvalue()}"
    assert len(fake.bodies) == len(turns)
    assert result.contract.setup_origin == "detected"
    assert result.contract.sandbox.network == "none"

    records = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").read_text().splitlines()]
    [baseline] = [r for r in records if r["kind"] == "baseline"]
    setup = baseline["setup"]
    assert setup["status"] == "ran", setup
    notes = [n for n in setup["notes"] if n.startswith("ai-fix: setup:")]
    assert notes, setup["notes"]
    assert notes[0] in log.getvalue()
    [check] = baseline["checks"]["results"]
    assert (check["name"], check["status"]) == ("tests", "pass"), check["output"][-2000:]

    # The baseline ran before the model wrote the test; the evidence runs the change's test files on the base code:
    # the added tests fail there and pass with the fix.
    reproduced = {t.id: t for t in result.evidence.reproduction.tests}
    assert result.evidence.reproduction.status == "verified"
    for test in release.added_tests:
        assert test in reproduced, sorted(reproduced)
        assert (reproduced[test].base, reproduced[test].laid_over) == ("fail", True), reproduced[test]
        assert reproduced[test].after == "pass", reproduced[test]
    assert all(c.verified for c in result.evidence.criteria), result.evidence.criteria

    assert sorted(f.path for f in result.diff.files) == sorted({release.fixed_file, release.test_file})
