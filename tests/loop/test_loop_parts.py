"""Pieces of the loop on their own: expectations, search, the editor, secrets, the trace, and Loop policies
run with the scripted backend in-process (real repo, real bwrap sandbox, real check runner)."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.checks.bound import SandboxChecks
from bot.checks.models import CheckResult, CheckRun
from bot.checks.models import TestCase as Case
from bot.commands.demo import make_repo
from bot.context.provider import RepoContext
from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.files import LocalRepoFiles
from bot.contract.models import Check, ModelConfig, TaskContract
from bot.loop.editor import edit
from bot.loop.harness import Harness, LoopConfig
from bot.loop.loop import Loop
from bot.loop.policy import expectation_met, signature
from bot.loop.records import MAX_CHECKPOINT_DIFF, Checkpoint, EditInput
from bot.loop.report import Reporter, Silent
from bot.loop.search import search_code
from bot.loop.trace import Trace
from bot.model.routing import choose_model
from bot.model.scripted import ScriptedModel, Turn, call, turn, user_text
from bot.redact import MASK
from bot.sandbox.select import open_sandbox
from bot.settings import load_settings
from bot.workspace import opening
from bot.workspace.branch import branch_name
from bot.workspace.models import DiffStats
from tests.support.repos import FolderTree
from tests.support.runs import CHECK, FINISH, FIX, MODEL, PLAN, SAMPLE_CRITERIA, config, sample_files, sample_issue


def run_of(*results: CheckResult) -> CheckRun:
    return CheckRun(commit="c", results=list(results))


def result(name: str, status: str, *tests: tuple[str, str], sig: str | None = None) -> CheckResult:
    cases = [Case(id=f"tests/test_calc.py::{t}", status=s) for t, s in tests]  # type: ignore[arg-type]
    return CheckResult(name=name, command="x", status=status, tests=cases, signature=sig)  # type: ignore[arg-type]


def test_expectations_are_judged_against_tests_then_checks() -> None:
    run = run_of(result("tests", "fail", ("test_add", "pass"), ("test_total", "fail")), result("lint", "pass"))
    assert expectation_met("tests: test_add passes", run).met
    assert not expectation_met("tests: test_total passes", run).met
    assert expectation_met("test_total still fails", run).met
    assert expectation_met("lint passes", run).met
    assert not expectation_met("everything passes", run).met


def test_signature_names_each_failing_check() -> None:
    run = run_of(result("tests", "fail", sig="AssertionError: x"), result("lint", "error"), result("types", "pass"))
    assert signature(run) == "lint:error | tests:AssertionError: x"


def test_search_code_caps_filters_and_skips_secret_files(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("\n".join(f"needle {i}" for i in range(50)))
    (tmp_path / "b.txt").write_text("Needle here\n")
    (tmp_path / ".env").write_text("NEEDLE=secret\n")
    out = search_code(tmp_path, "needle", max_hits=5)
    assert out.splitlines()[0] == "b.txt:1: Needle here"
    assert "46 more matches not shown" in out and ".env" not in out
    assert search_code(tmp_path, "needle", "src/**").startswith("src/a.py:1: needle 0")
    assert search_code(tmp_path, "absent") == "no match for 'absent'"


def test_editor_view_insert_create_and_refusals(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 2\n")
    tree = FolderTree(tmp_path)
    viewed = edit(tree, tree.gate, EditInput(command="view", path="m.py", view_range=[2, -1]), DiffStats())
    assert viewed.ok and viewed.text == "     2\tb = 2"
    inserted = edit(
        tree, tree.gate, EditInput(command="insert", path="m.py", insert_line=1, insert_text="c = 3"), DiffStats()
    )
    assert inserted.ok and (tmp_path / "m.py").read_text() == "a = 1\nc = 3\nb = 2\n"
    created = edit(tree, tree.gate, EditInput(command="create", path="pkg/new.py", file_text="x = 1\n"), DiffStats())
    assert created.ok and (tmp_path / "pkg" / "new.py").read_text() == "x = 1\n"
    twice = edit(
        tree, tree.gate, EditInput(command="str_replace", path="m.py", old_str=" = ", new_str="="), DiffStats()
    )
    assert not twice.ok and "3 matches" in twice.text
    missing = edit(tree, tree.gate, EditInput(command="view", path="nope.py"), DiffStats())
    assert not missing.ok and "does not exist" in missing.text


def test_trace_is_redacted_and_appended_line_by_line(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "t" / "trace.jsonl", ["s3cr3t-value-123"])
    trace.append(CheckRun(commit="one", results=[]))
    trace.append(CheckRun(commit="leaked s3cr3t-value-123 here", results=[]))
    lines = (tmp_path / "t" / "trace.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["commit"] == "one"
    assert json.loads(lines[1])["commit"] == f"leaked {MASK} here"


@pytest.fixture
def loop_parts(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A real workspace, bwrap sandbox and check runner over the sample repo; yields a Loop factory."""
    repo = make_repo(tmp_path / "repo", sample_files(**{".github/ai-fix.yml": config()}))
    files = LocalRepoFiles(repo)
    contract = build_contract(snapshot_from_markdown(sample_issue(), str(repo)), files)
    workspace = opening.local(repo, tmp_path / "jobs", branch=branch_name(None, contract.title), ref=files.commit)
    sandbox = open_sandbox("bwrap", workspace.path, contract.sandbox)

    def make(
        script: list[Turn],
        *,
        contract_update: dict[str, object] | None = None,
        budget_update: dict[str, object] | None = None,
        reporter: Reporter | None = None,
        clock: Callable[[], float] | None = None,
        **cfg: int,
    ) -> tuple[Loop, ScriptedModel]:
        model = ScriptedModel(script)
        task = contract.model_copy(update=contract_update or {})
        task = task.model_copy(update={"budget": task.budget.model_copy(update=budget_update or {})})
        harness = Harness(
            contract=task,
            model=model,
            workspace=workspace,
            checks=SandboxChecks(sandbox, task, []),
            context=RepoContext(workspace.path, cache_dir=tmp_path / "context"),
            trace=Trace(tmp_path / "trace.jsonl", []),
            config=LoopConfig(model=MODEL, small_model="claude-3-5-haiku", **cfg),
            reporter=reporter or Silent(),
            **({"clock": clock} if clock else {}),  # type: ignore[arg-type]
        )
        return Loop(harness), model

    yield make
    sandbox.close()
    workspace.remove()


def test_history_is_compressed_by_the_small_model_and_the_stable_layer_never_changes(loop_parts) -> None:  # type: ignore[no-untyped-def]
    views = [turn(f"look {i}", call("search_code", query=f"value{i}")) for i in range(6)]
    loop, model = loop_parts(
        [
            turn("plan", PLAN),
            *views,
            turn("fix", FIX, CHECK),
            turn("done", call("finish", summary="s", criteria=SAMPLE_CRITERIA)),
        ],
        history_tokens=10,
    )
    loop.state.notes.conclude(*(f"earlier finding number {i}. Details follow" for i in range(6)))
    result = loop.run()
    assert result.outcome == "accepted"
    compress = [r for r in model.requests if r.purpose == "compress"]
    assert compress and compress[0].model == "claude-3-5-haiku" and compress[0].tools == []
    steps = [r for r in model.requests if r.purpose == "step"]
    assert len({r.system for r in steps}) == 1 and all(r.model == MODEL for r in steps)
    assert "(earlier) earlier finding number 0" in user_text(steps[-1])


def test_ask_human_hands_off_with_the_question(loop_parts) -> None:  # type: ignore[no-untyped-def]
    loop, _ = loop_parts(
        [turn("?", call("ask_human", question="Should add() accept strings?", reason="the issue is silent"))]
    )
    result = loop.run()
    assert result.outcome == "handed_off" and result.handoff.question == "Should add() accept strings?"
    assert result.steps == 1 and result.diff.files == []


def test_a_plan_outside_the_scope_is_refused_and_asked_again(loop_parts) -> None:  # type: ignore[no-untyped-def]
    bad_plan = call("plan", steps=[{"do": "edit CI", "done_when": "green"}], impact=[".github/workflows/ci.yml"])
    loop, model = loop_parts(
        [
            turn("p", bad_plan),
            turn("p", call("str_replace_based_edit_tool", command="view", path="calc.py")),
            turn("p", PLAN),
            turn("f", FIX, CHECK),
            turn("d", call("finish", summary="s", criteria=SAMPLE_CRITERIA)),
        ]
    )
    result = loop.run()
    assert result.outcome == "accepted"
    assert [r.tool_choice for r in model.requests[:3]] == [{"type": "tool", "name": "plan"}] * 3
    assert result.plan is not None and result.plan.impact == ["calc.py"]


def test_an_incomplete_contract_needs_clarification_without_running_anything(loop_parts) -> None:  # type: ignore[no-untyped-def]
    loop, model = loop_parts([], contract_update={"status": "needs_clarification", "missing": ["acceptance criteria"]})
    result = loop.run()
    assert result.outcome == "needs_clarification" and "acceptance criteria" in result.reason
    assert model.requests == [] and result.baseline is None


class Interrupted(Exception):
    """Stands in for Ctrl-C or `/agent stop` raised from the progress callback."""


def test_an_interruption_keeps_the_edits_on_the_branch_and_ends_the_trace(loop_parts, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    class StopAtTheEdit(Silent):
        def say(self, line: str) -> None:
            if line.startswith("edit:"):
                raise Interrupted("stop requested")

    loop, _ = loop_parts([turn("plan", PLAN), turn("fix", FIX, CHECK)], reporter=StopAtTheEdit())
    with pytest.raises(Interrupted):
        loop.run()
    ws = loop.h.workspace
    assert ws.head_sha != ws.base_sha and "return a + b" in (ws.path / "calc.py").read_text()
    last = json.loads((tmp_path / "trace.jsonl").read_text().splitlines()[-1])
    assert last["kind"] == "end" and last["reason"] == "interrupted: Interrupted: stop requested"


def test_the_cost_limit_keeps_a_reserve_and_still_hands_off_with_the_work(loop_parts) -> None:  # type: ignore[no-untyped-def]
    loop, model = loop_parts(
        [turn("plan", PLAN), turn("fix", FIX), turn("more", CHECK)], budget_update={"max_cost_usd": 0.0032}
    )
    result = loop.run()
    assert result.outcome == "handed_off" and "the cost limit ($0.0032, 10% kept in reserve)" in result.reason
    assert result.cost.usd is not None and result.cost.usd >= 0.9 * 0.0032
    assert len(model.requests) == 2 and result.final is not None and result.final.passed
    assert "return a + b" in result.diff_text


def test_the_wall_time_limit_is_checked_before_each_model_call(loop_parts) -> None:  # type: ignore[no-untyped-def]
    ticks = iter(range(0, 10_000, 20))
    loop, model = loop_parts(
        [turn("plan", PLAN), turn("look", call("search_code", query="add"))] * 5,
        budget_update={"max_wall_minutes": 2},
        clock=lambda: float(next(ticks)),
    )
    assert loop.state.meter.started == 0.0
    result = loop.run()
    assert result.outcome == "handed_off" and "wall-time limit (2 min" in result.reason
    assert 0 < len(model.requests) < 10


def test_a_check_still_running_when_the_wall_time_runs_out_is_stopped_there(loop_parts) -> None:  # type: ignore[no-untyped-def]
    began, calls = time.monotonic(), itertools.count()

    def clock() -> float:  # the run started 50 s ago: about 4 s are left before the 54 s (1 min less 10%)
        return 0.0 if next(calls) == 0 else 50.0 + time.monotonic() - began

    slow = Check(name="tests", run="sleep 120", timeout=600)
    loop, model = loop_parts(
        [turn("plan", PLAN)], contract_update={"checks": [slow]}, budget_update={"max_wall_minutes": 1}, clock=clock
    )
    result = loop.run()
    baseline = result.baseline.results[0]
    assert baseline.status == "timeout" and "the run's wall-time budget ran out" in baseline.reason
    assert baseline.duration_s < 30, "the check ran on past the budget"
    assert result.outcome == "handed_off" and "wall-time limit (1 min" in result.reason and model.requests == []


WRITES_FILES = (
    "printf '[submodule \"x\"]\\n\\tpath = x\\n\\turl = https://evil.example/x.git\\n' > .gitmodules"
    " && echo '* filter=evil' > .gitattributes && echo 'import os' > conftest.py"
    " && mkdir -p notes && echo written > notes/report.txt && rm -f README.md"
    " && python3 -m unittest discover -s tests -t . -v"
)
"""The sample's tests, run by a check that also writes repository plumbing and files of its own and deletes
a committed file (the sandbox user cannot change the files the host wrote; see tests/workspace for that)."""


def test_only_what_the_model_wrote_is_committed_and_what_the_checks_wrote_is_listed(loop_parts, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    writes = Check(name="tests", run=WRITES_FILES, timeout=60)
    loop, _ = loop_parts(
        [turn("plan", PLAN), turn("fix", FIX, CHECK), turn("done", FINISH)], contract_update={"checks": [writes]}
    )
    result = loop.run()
    assert result.outcome == "accepted", result.reason
    ws = loop.h.workspace
    committed = ws.git("diff", "--name-only", ws.base_sha, ws.head_sha).stdout.decode().split()
    assert committed == ["calc.py"], "only the model's edit is in the checkpoints"
    calc = ws.git("show", f"{ws.head_sha}:calc.py").stdout.decode()
    assert "return a + b" in calc and (ws.path / "README.md").is_file(), "the deleted file was put back"
    assert not (ws.path / ".gitmodules").exists() and not (ws.path / "conftest.py").exists()
    records = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    kept = [a["checkpoint"] for r in records if r["kind"] == "step" for a in r["actions"] if a.get("checkpoint")]
    assert kept and kept[0]["discarded"] == [
        ".gitattributes",
        ".gitmodules",
        "README.md",
        "conftest.py",
        "notes/report.txt",
    ]


BUILDS = "echo built > stamp.txt && mkdir -p 'calc [x].egg-info' && echo v > 'calc [x].egg-info/PKG-INFO'"
"""A setup that writes outside the sample's ignore rules, as `pip install -e .` writes an egg-info."""


def test_what_setup_wrote_stays_for_the_checks_and_is_never_committed(loop_parts) -> None:  # type: ignore[no-untyped-def]
    needs = Check(
        name="tests",
        run="test -f stamp.txt && test -f 'calc [x].egg-info/PKG-INFO' && python3 -m unittest discover -s tests -t . -v",
        timeout=60,
    )

    said: list[str] = []

    class Lines(Silent):
        def say(self, line: str) -> None:
            said.append(line)

    reporter = Lines()
    loop, _ = loop_parts(
        [turn("plan", PLAN), turn("fix", FIX, CHECK), turn("done", FINISH)],
        contract_update={"checks": [needs], "setup": [BUILDS]},
        reporter=reporter,
    )
    result = loop.run()
    assert result.outcome == "accepted", result.reason
    assert [r.status for r in result.baseline.results] == ["fail"], "the baseline ran with what setup wrote"
    ws = loop.h.workspace
    committed = ws.git("diff", "--name-only", ws.base_sha, ws.head_sha).stdout.decode().split("\n")
    assert committed == ["calc.py", ""], "what setup wrote is not the model's change"
    assert (ws.path / "stamp.txt").is_file() and (ws.path / "calc [x].egg-info" / "PKG-INFO").is_file()
    ws.rollback()  # git clean leaves it too
    assert (ws.path / "stamp.txt").is_file() and ws.untracked() == set()
    assert "setup wrote 2 paths git does not ignore, kept out of the change: calc [x].egg-info/, stamp.txt" in said


def test_model_given_on_the_command_line_wins_and_says_so() -> None:
    contract = TaskContract(
        status="ready", title="Add a cache", goal="faster", model=ModelConfig(name="claude-opus-4-5")
    )
    settings = load_settings(model="claude-sonnet-4-5", small_model="claude-haiku-4-5")
    assert choose_model(contract, settings.model, settings.small_model).name == "claude-opus-4-5"
    chosen = choose_model(contract, settings.model, settings.small_model, override="claude-sonnet-4-5-20250929")
    assert (chosen.name, chosen.small) == ("claude-sonnet-4-5-20250929", "claude-haiku-4-5")
    assert chosen.reason == "given on the command line: claude-sonnet-4-5-20250929"


def test_a_checkpoints_diff_is_kept_up_to_a_limit_and_the_rest_counted() -> None:
    small = Checkpoint.of("abc", "+x\n")
    assert (small.diff, small.dropped_chars) == ("+x\n", 0)
    big = Checkpoint.of("abc", "y" * (MAX_CHECKPOINT_DIFF + 5))
    assert len(big.diff) == MAX_CHECKPOINT_DIFF and big.dropped_chars == 5


def test_narrowing_never_names_the_environments_files(loop_parts) -> None:  # type: ignore[no-untyped-def]
    """A traceback through the job's `.ai-fix-env/` or any site-packages points at installed code, not the project."""
    from bot.loop.state import RunState
    from bot.loop.steering import failing_area

    loop, _ = loop_parts([])
    root = loop.h.workspace.path
    installed = ".ai-fix-env/venv/lib/python3.11/site-packages/pluggy/_hooks.py"
    vendored = "lib/site-packages/six.py"
    for path in (installed, vendored):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x = 1\n")
    output = f"{installed}:501: in __call__\n{vendored}:3: in <module>\ncalc.py:5: in add\n"  # pytest's short frames
    run = CheckRun(commit="c", results=[CheckResult(name="tests", command="x", status="fail", summary=output)])
    assert failing_area(loop.h, RunState.begin(loop.h), run) == ["calc.py"]
