"""`ai-fix eval` through the real command line: a task built from two sdists on a loopback index, real git,
the real bwrap sandbox, the calibration policies and a model behind the fake Messages API."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bot.commands.main import main
from bot.model.scripted import ScriptedModel, Turn, call, turn
from tests.support.eval_tasks import FAIL_TO_PASS, FIXED_CODE, serve_index, swe_row, task_row, write_tasks
from tests.support.model import serve_fake_api
from tests.support.runs import MODEL
from tests.support.sandbox import python_paths

pytestmark = pytest.mark.bwrap

CRITERIA = ['`words("a  b")` returns `["a", "b"]`', '`words("a\\tb\\nc")` returns `["a", "b", "c"]`']
WEAK_TEST = 'from tally import words\n\n\ndef test_double_space():\n    assert words("a  b") == ["a", "b"]\n'
INCORRECT: list[Turn] = [
    turn(
        "Drop the empty strings split() leaves between spaces, and test it.",
        call(
            "plan",
            steps=[{"do": "filter empty words", "done_when": "a test of words('a  b') passes"}],
            impact=["tally.py"],
        ),
    ),
    turn(
        "Filtering empty words.",
        call(
            "str_replace_based_edit_tool",
            command="str_replace",
            path="tally.py",
            old_str='    return text.split(" ")',
            new_str='    return [w for w in text.split(" ") if w]',
        ),
        call("str_replace_based_edit_tool", command="create", path="tests/test_spaces.py", file_text=WEAK_TEST),
    ),
    turn("Running the tests.", call("run_checks", names=["tests"], expect="test_double_space passes")),
    turn(
        "Both criteria are shown by my test.",
        call(
            "finish",
            summary="words() drops empty strings.",
            risks=["none"],
            criteria=[{"criterion": c, "test": "tests/test_spaces.py::test_double_space"} for c in CRITERIA],
        ),
    ),
]
"""A fix that passes its own weak test (repeated spaces) but not the hidden one (tabs and newlines)."""


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIFIX_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("AIFIX_EVAL_CACHE", str(tmp_path / "sdists"))
    monkeypatch.setenv("AIFIX_SANDBOX_RO_PATHS", json.dumps([str(p) for p in python_paths()]))
    monkeypatch.setenv("AIFIX_ANTHROPIC_API_KEY", "sk-ant-eval-test-key-00000000000")
    for name in ("ANTHROPIC_API_KEY", "AIFIX_MODEL", "AIFIX_SMALL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def report(out: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((out / "report.json").read_text())
    return document


def classes(document: dict[str, Any]) -> dict[str, str]:
    return {t["variant"]: t["class"] for t in document["tasks"]}


def test_oracle_noop_and_an_incorrect_model_are_told_apart(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(env / "tasks.jsonl", [task_row()])
    out = env / "out"
    with serve_index() as (index, simple), serve_fake_api(ScriptedModel(list(INCORRECT))) as (fake, url):
        monkeypatch.setenv("AIFIX_EVAL_INDEX_URL", simple)
        monkeypatch.setenv("AIFIX_ANTHROPIC_BASE_URL", url)
        argv = ["eval", str(tasks), "--model", "oracle", "--model", "noop", "--model", MODEL]
        code = main([*argv, "--sandbox", "bwrap", "--out", str(out), "--jobs", "2"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    document = report(out)
    assert classes(document) == {"oracle": "automatic", "noop": "refused", MODEL: "incorrect"}
    wrong = next(t for t in document["tasks"] if t["variant"] == MODEL)
    assert wrong["outcome"] == "accepted"
    assert wrong["hidden"]["fail_to_pass"] == {FAIL_TO_PASS[0]: "pass", FAIL_TO_PASS[1]: "fail"}
    assert all(s == "pass" for s in wrong["hidden"]["pass_to_pass"].values())
    # The model never saw the hidden tests: no request carried the tab test's name or the fixed code.
    assert fake.bodies and not any("test_tabs_and_newlines" in b or "text.split()" in b for b in fake.bodies)
    # Each release was downloaded once (the index listed twice), though three runs used the task.
    assert sorted(p for p in index.served if p.startswith("/files/")) == [
        "/files/tally-1.0.0.tar.gz",
        "/files/tally-1.0.1.tar.gz",
    ]
    summary = {s["variant"]: s for s in document["summary"]}
    assert summary[MODEL]["classes"]["incorrect"]["k"] == 1 and summary[MODEL]["takeover"]["k"] == 0
    assert summary["noop"]["takeover"]["k"] == 1 and summary["noop"]["resolved"]["k"] == 0
    assert summary[MODEL]["tokens"]["input"] > 0 and summary[MODEL]["usd_per_task"] > 0
    assert summary["oracle"]["rounds"] >= 1
    md = (out / "report.md").read_text()
    assert "harness locked" in md and md.index("| incorrect |") < md.index("| automatic |")
    assert (out / "classes.png").read_bytes().startswith(b"\x89PNG")
    for variant in ("oracle", "noop", MODEL):
        folder = out / "tasks" / "tally-1.0.1" / variant
        assert {"trace.jsonl", "evidence.json", "pr.md", "hidden.log", "result.json"} <= {
            p.name for p in folder.iterdir()
        }
    assert "FAIL_TO_PASS" in (out / "tasks" / "tally-1.0.1" / MODEL / "hidden.log").read_text()
    assert "[3/3]" in printed.err and "incorrect" in printed.err


def test_resume_runs_only_what_is_not_finished(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(env / "tasks.jsonl", [task_row("tally-a"), task_row("tally-b")])
    out = env / "out"
    with serve_index() as (_index, simple):
        monkeypatch.setenv("AIFIX_EVAL_INDEX_URL", simple)
        assert (
            main(["eval", str(tasks), "--model", "noop", "--sandbox", "bwrap", "--out", str(out), "--limit", "1"]) == 0
        )
        first = (out / "tasks" / "tally-a" / "noop" / "result.json").read_text()
        again = ["eval", str(tasks), "--model", "noop", "--sandbox", "bwrap", "--out", str(out)]
        assert main(again) == 2 and "--resume" in capsys.readouterr().err
        assert main([*again, "--resume"]) == 0
    assert "2 runs (1 already done)" in capsys.readouterr().out
    assert (out / "tasks" / "tally-a" / "noop" / "result.json").read_text() == first
    assert classes(report(out)) == {"noop": "refused"} and len(report(out)["tasks"]) == 2


def test_a_task_that_cannot_be_run_is_reported_apart_and_the_exit_is_1(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = task_row("tally-bad")
    bad["pypi"] = {**bad["pypi"], "fixed_sha256": "0" * 64}
    tasks = write_tasks(env / "tasks.jsonl", [bad])
    with serve_index() as (_index, simple):
        monkeypatch.setenv("AIFIX_EVAL_INDEX_URL", simple)
        code = main(["eval", str(tasks), "--model", "noop", "--sandbox", "bwrap", "--out", str(env / "out")])
    assert code == 1
    err = capsys.readouterr().err
    assert "not run: tally-bad noop" in err and "the task pins 0000" in err
    summary = report(env / "out")["summary"][0]
    assert summary["errors"] == 1 and summary["tasks"] == 0


def test_bad_input_stops_before_any_run(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        task_row("x", FAIL_TO_PASS="[]"),
        {"instance_id": "y", "problem_statement": "p", "FAIL_TO_PASS": ["t.py::t"]},
    ]
    tasks = write_tasks(env / "tasks.jsonl", rows)
    assert main(["eval", str(tasks), "--model", "noop", "--out", str(env / "out")]) == 2
    err = capsys.readouterr().err
    assert "line 1: FAIL_TO_PASS: List should have at least 1 item" in err
    assert "line 2: a task needs `repo`, `base_commit` and `test_patch`, or a `pypi` release pair" in err
    assert not (env / "out").exists()


def test_list_sets_names_the_shipped_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--list-sets"]) == 0
    assert "pypi-fixes: 7 tasks." in capsys.readouterr().out


def test_configs_lock_the_model_and_compare_harnesses(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (env / "roomy.yml").write_text("budget:\n  max_steps: 12\n")
    (env / "tight.yml").write_text("name: two-steps\nbudget:\n  max_steps: 2\nloop:\n  history_tokens: 600\n")
    tasks = write_tasks(env / "tasks.jsonl", [task_row()])
    out = env / "out"
    with serve_index() as (_index, simple):
        monkeypatch.setenv("AIFIX_EVAL_INDEX_URL", simple)
        argv = [
            "eval",
            str(tasks),
            "--model",
            "noop",
            "--config",
            str(env / "roomy.yml"),
            "--config",
            str(env / "tight.yml"),
        ]
        assert main([*argv, "--sandbox", "bwrap", "--out", str(out)]) == 0
    document = report(out)
    assert [c["locked"] for c in document["comparisons"]] == ["model: noop"]  # one model: no table of models
    assert document["configs"]["two-steps"] == {"budget": {"max_steps": 2}, "loop": {"history_tokens": 600}}
    runs = {t["variant"]: t for t in document["tasks"]}
    assert runs["noop@roomy"]["outcome"] == "unverified" and runs["noop@roomy"]["steps"] == 4
    # The budget reached the run through the task's .github/ai-fix.yml: two steps, then the loop stopped.
    assert runs["noop@two-steps"]["steps"] == 2 and runs["noop@two-steps"]["outcome"] != "accepted"
    assert "## Harnesses compared, model locked (noop)" in (out / "report.md").read_text()
    assert capsys.readouterr().out.count("| `noop@two-steps` |") == 1


def test_a_swe_bench_row_runs_from_a_mirror_at_its_base_commit(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repos = env / "repos"
    repos.mkdir()
    tasks = write_tasks(env / "tasks.jsonl", [swe_row(repos)])
    out = env / "out"
    assert (
        main(["eval", str(tasks), "--model", "oracle", "--repos", str(repos), "--sandbox", "bwrap", "--out", str(out)])
        == 0
    )
    [run] = report(out)["tasks"]
    assert run["class"] == "automatic" and run["hidden"]["fail_to_pass"] == dict.fromkeys(FAIL_TO_PASS, "pass")
    clone = Path(run["repo"])
    # The run's clone holds the base commit on main, its own branch, and nothing of the mirror's later commits.
    assert "the tests" not in git_log(clone, "--all") and "the fix" not in git_log(clone, "--all")
    assert "initial" in git_log(clone, "main")
    assert main(["eval", str(tasks), "--model", "oracle", "--sandbox", "bwrap", "--out", str(env / "o2")]) == 1
    assert "pass --repos DIR holding tally__tally.git" in capsys.readouterr().err


def git_log(repo: Path, *refs: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%s", *refs], capture_output=True, text=True, check=True
    ).stdout


OUTSIDE = """diff --git a/../../victim.txt b/../../victim.txt
--- a/../../victim.txt
+++ b/../../victim.txt
@@ -1 +1 @@
-kept
+gone
"""


def test_a_row_whose_diff_names_a_path_outside_its_repository_is_refused_before_anything_runs(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos = env / "repos"
    repos.mkdir()
    # Where `tree/../../victim.txt` lands for the hidden tests' work tree (AIFIX_WORK_DIR/eval/hidden-*/tree).
    victim = env / "work" / "eval" / "victim.txt"
    victim.parent.mkdir(parents=True)
    victim.write_text("kept\n")
    row = swe_row(repos)
    row["test_patch"] += OUTSIDE
    tasks = write_tasks(env / "tasks.jsonl", [row])
    argv = ["eval", str(tasks), "--model", "noop", "--repos", str(repos), "--sandbox", "bwrap", "--out", str(env / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "task tally__tally-1: test_patch: it touches '../../victim.txt', outside the repository's files" in err
    assert victim.read_text() == "kept\n" and not (env / "o").exists()


def test_a_hunk_line_that_looks_like_a_header_is_no_path_and_nothing_outside_is_read(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    canary = env / "host-canary.txt"
    canary.write_text("HOST-FILE-CANARY-5d1f\n")
    # An added line `++ b/...` reads `+++ b/...` in the diff: a file's content, not the name of one.
    climb = "../" * 40 + str(canary).lstrip("/")
    fix = FIXED_CODE + f'\n\nNOTE = """\n++ b/{climb}\n"""\n'
    repos = env / "repos"
    repos.mkdir()
    tasks = write_tasks(env / "tasks.jsonl", [swe_row(repos, fixed_code=fix)])
    out = env / "out"
    argv = ["eval", str(tasks), "--model", "oracle", "--repos", str(repos), "--sandbox", "bwrap", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    folder = out / "tasks" / "tally__tally-1" / "oracle"
    assert [p.name for p in folder.iterdir() if "HOST-FILE-CANARY" in p.read_text()] == []
    [run] = report(out)["tasks"]
    assert run["class"] == "automatic"
