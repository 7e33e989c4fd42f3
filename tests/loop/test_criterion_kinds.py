"""The most common issue ends accepted: a behaviour criterion and one that asks the existing tests to keep passing,
through `ai-fix run` (the real Anthropic client on the fake Messages API, bwrap, the sample calculator's own tests).
And a stall after the checks went green never throws the passing change away.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bot.commands.demo import make_repo
from bot.commands.main import main
from bot.model.scripted import ScriptedModel, Turn, call, turn
from tests.support.model import serve_fake_api
from tests.support.runs import CHECK, FIX, PLAN, run_local, sample_files
from tests.support.runs import config as repo_config

pytestmark = pytest.mark.bwrap

TEST_ADD = "tests/test_calc.py::CalcTest::test_add"
ISSUE = (
    "# add() subtracts instead of adding\n\n"
    "## Goal\n`add(a, b)` must return the sum of `a` and `b`.\n\n"
    "## Acceptance criteria\n- `add(2, 3)` returns 5\n- The existing tests in `tests/test_calc.py` pass\n\n"
    "## Checks\n- tests\n"
)
MAPPED = [{"criterion": "1", "test": TEST_ADD}, {"criterion": "2", "test": "tests"}]


def finish(**extra: Any) -> tuple[str, dict[str, Any]]:
    return call("finish", summary="add() returns a + b.", risks=[], **extra)


def ai_fix_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: list[Turn]) -> tuple[int, Path]:
    repo = make_repo(tmp_path / "repo", sample_files(**{".github/ai-fix.yml": repo_config()}))
    issue, out = tmp_path / "issue.md", tmp_path / "out"
    issue.write_text(ISSUE)
    monkeypatch.setenv("AIFIX_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("AIFIX_ANTHROPIC_API_KEY", "sk-ant-test-key")
    with serve_fake_api(ScriptedModel(script)) as (_api, url):
        monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", url)
        code = main(["run", "--repo", str(repo), "--issue", str(issue), "--sandbox", "bwrap", "--out", str(out)])
    return code, out


def criteria(out: Path) -> list[tuple[str, str, bool, list[str]]]:
    data = json.loads((out / "evidence.json").read_text())
    return [(c["text"], c["kind"], c["verified"], c["by"]) for c in data["criteria"]]


@pytest.mark.parametrize("mapping", [MAPPED, None], ids=["mapped-by-number", "no-mapping"])
def test_a_behaviour_and_a_keep_passing_criterion_end_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mapping: list[dict[str, str]] | None
) -> None:
    done = finish(criteria=mapping) if mapping else finish()
    code, out = ai_fix_run(tmp_path, monkeypatch, [turn("Plan.", PLAN), turn("Fix.", FIX, CHECK), turn("Done.", done)])

    assert code == 0
    data = json.loads((out / "evidence.json").read_text())
    assert data["outcome"] == "accepted", data["reason"]
    # Mapped, the criterion names its test; alone among the behaviour criteria, the whole reproduction shows it.
    shown = [TEST_ADD] if mapping else [TEST_ADD, TEST_ADD.replace("test_add", "test_total")]
    assert criteria(out) == [
        ("`add(2, 3)` returns 5", "behaviour", True, shown),
        ("The existing tests in `tests/test_calc.py` pass", "regression", True, ["tests"]),
        ("The checks pass: tests.", "regression", True, ["tests"]),
    ]
    evidence = (out / "pr.md").read_text().split("## Evidence")[1].split("## Not verified")[0]
    assert f"✅ `add(2, 3)` returns 5 _(stated · behaviour)_ — shown by `{TEST_ADD}`" in evidence
    assert (
        "✅ The existing tests in `tests/test_calc.py` pass _(stated · regression)_ — shown by `tests` "
        "(every check that could run passes)" in evidence
    )


def test_the_contract_and_the_models_prompt_show_each_criterions_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", sample_files(**{".github/ai-fix.yml": repo_config()}))
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    assert main(["contract", "--repo", str(repo), "--issue", str(issue)]) == 0
    contract = json.loads(capsys.readouterr().out)
    assert [(c["text"], c["kind"]) for c in contract["acceptance_criteria"]][:2] == [
        ("`add(2, 3)` returns 5", "behaviour"),
        ("The existing tests in `tests/test_calc.py` pass", "regression"),
    ]
    run = run_local(
        tmp_path / "run", [turn("Plan.", PLAN), turn("Fix.", FIX, CHECK), turn("Done.", finish())], issue=ISSUE
    )
    prompt = run.fake.bodies[0]
    assert '\\"kind\\": \\"regression\\"' in prompt and '\\"kind\\": \\"behaviour\\"' in prompt


def test_a_stall_after_a_refused_finish_keeps_the_passing_change_and_ends_unverified(tmp_path: Path) -> None:
    """A correct fix without a test (the mul repository's tests pass on the base commit), `finish` refused for want
    of evidence, then three answers without a tool call: the change stays, nothing is rolled back."""
    from tests.support.runs import MUL_FIX, MUL_ISSUE, MUL_PLAN, mul_files

    silent = turn("I think this is done.")
    script = [turn("p", MUL_PLAN), turn("fix", MUL_FIX, call("run_checks", names=["tests"])), turn("d", finish())]
    run = run_local(tmp_path, [*script, silent, silent, silent], files=mul_files(), issue=MUL_ISSUE)

    assert run.result.outcome == "unverified", run.result.reason
    assert "not every criterion is shown" in run.result.reason
    assert run.result.handoff.attempts_ref == "" and run.result.handoff.ruled_out == []
    branch = subprocess.run(
        ["git", "-C", str(run.repo), "show", f"{run.result.branch}:calc.py"], capture_output=True, text=True, check=True
    ).stdout
    assert "-a * b" not in branch, "the fix is on the branch"
    refusal = next(a for a in run.actions() if a["tool"] == "finish")["observation"]["text"]
    assert "criterion 1 (behaviour) '`mul(-2, 3)` returns -6' is not shown" in refusal
    assert "add a test that fails on the base commit and passes after the change" in refusal


def test_a_stall_on_a_change_whose_checks_got_worse_still_rolls_back(tmp_path: Path) -> None:
    from tests.support.runs import MUL_ISSUE, MUL_PLAN, mul_files

    broken = call(
        "str_replace_based_edit_tool", command="str_replace", path="calc.py",
        old_str="    return a * b", new_str="    return a + b",
    )  # fmt: skip
    silent = turn("Hmm.")
    script = [turn("p", MUL_PLAN), turn("break", broken, call("run_checks", names=["tests"])), silent, silent, silent]
    run = run_local(
        tmp_path, [*script, turn("stop", call("ask_human", question="?"))], files=mul_files(), issue=MUL_ISSUE
    )

    assert run.result.outcome == "handed_off"
    assert any("3 answers in a row without a tool call" in r for r in run.result.handoff.ruled_out)
    assert run.result.handoff.attempts_ref, "the rolled-back attempt is kept aside"
