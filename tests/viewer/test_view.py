"""Reading a trace as it grows, and what the page makes of records old, new or damaged."""

from __future__ import annotations

import json
from pathlib import Path

from bot.checks.models import CheckResult, CheckRun
from bot.loop.records import ActionRecord, Checkpoint, EndRecord, Observation, StartRecord, StepRecord
from bot.loop.trace import Trace
from bot.model.base import Usage
from bot.viewer.chart import Point, cost_chart
from bot.viewer.pages import Pages
from bot.viewer.tracefile import TraceReader
from bot.viewer.view import OtherView, StepView, build_view, chart_points

DIFF = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-    return a - b\n+    return a + b\n"
)


def step(n: int, *, status: str = "pass", cost: float | None = 0.01, checkpoint: bool = False) -> StepRecord:
    run = CheckRun(commit="c0ffee", results=[CheckResult(name="tests", command="pytest", status=status)])  # type: ignore[arg-type]
    action = ActionRecord(
        tool="run_checks",
        input={"names": ["tests"]},
        decision="executed",
        observation=Observation(ok=True, text="tests: pass"),
        checks=run,
        checkpoint=Checkpoint.of("abc123", DIFF) if checkpoint else None,
    )
    usage = Usage(input_tokens=100, output_tokens=10, cache_read_tokens=900)
    return StepRecord(step=n, intent=f"step {n}", actions=[action], usage=usage, cost_usd=cost)


def test_the_reader_takes_complete_lines_only_and_notices_a_trace_begun_afresh(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    reader = TraceReader(path, ["hunter2-secret-value"])
    assert reader.read() == [], "no file yet is no record yet"
    trace = Trace(path, ["hunter2-secret-value"])
    trace.append(StartRecord(title="t", model="m", small_model="s", model_reason="", branch="b", base_sha="0"))
    with path.open("a") as fh:
        fh.write('{"kind": "step", "intent": "the key is hunter2-secret-value"}\n{"kind": "st')
    records = reader.read()
    assert [r["kind"] for r in records] == ["start", "step"]
    assert records[1]["intent"] == "the key is [REDACTED]", "redacted again on the way in"
    with path.open("a") as fh:
        fh.write('ep", "step": 2}\nnot json at all\n')
    assert reader.read() == [{"kind": "step", "step": 2}, {"kind": "unreadable", "text": "not json at all"}]
    assert not reader.restarted
    Trace(path, []).append(
        StartRecord(title="again", model="m", small_model="s", model_reason="", branch="b", base_sha="1")
    )
    assert [r["title"] for r in reader.read()] == ["again"] and reader.restarted


def test_unknown_kinds_and_fields_render_generically_and_damaged_values_do_not_break_the_page() -> None:
    records = [
        {"kind": "start", "title": "T", "model": "m", "reproduction": {"command": "pytest -k add"}},
        step(1).model_dump(mode="json"),
        {"kind": "criteria_check", "criterion": "add(2, 3) returns 5", "met": True},
        {"kind": "step", "step": "2", "actions": "not a list", "usage": {"input_tokens": "many"}, "cost_usd": "free"},
        {"kind": "end", "outcome": "unverified", "reason": "no test reproduced the report", "extra_note": 7},
    ]
    view = build_view(records)
    assert [type(t) for t in view.timeline] == [StepView, OtherView, StepView]
    assert view.extras["start"] == {"reproduction": {"command": "pytest -k add"}}
    assert view.extras["end"] == {"extra_note": 7} and view.status == "unverified"
    assert view.totals()["cost"] is None, "a step of unknown cost makes the total unknown, not zero"
    html = "".join(Pages().sections(view, {"facts": []}).values()) + "".join(Pages().item(t) for t in view.timeline)
    assert "criteria_check" in html and "add(2, 3) returns 5" in html
    assert "pytest -k add" in html and "extra_note" in html and "unverified" in html


def test_step_status_checkpoint_diff_and_plan() -> None:
    plan = StepRecord(
        step=1,
        intent="Fix add() first.",
        actions=[
            ActionRecord(
                tool="plan",
                input={"steps": [{"do": "fix add", "done_when": "tests pass"}], "impact": ["calc.py"]},
                decision="executed",
                observation=Observation(ok=True, text="plan recorded"),
            )
        ],
    )
    refused = StepRecord(
        step=2, actions=[ActionRecord(tool="finish", decision="refused", observation=Observation(ok=False, text="no"))]
    )
    records = [r.model_dump(mode="json") for r in (plan, refused, step(3, status="fail"), step(4, checkpoint=True))]
    view = build_view(records)
    assert [(s.number, s.status, s.checkpoints) for s in view.steps] == [
        (1, "ok", 0),
        (2, "refused", 0),
        (3, "fail", 0),
        (4, "pass", 1),
    ]
    assert view.plan is not None and (view.plan.approach, view.plan.impact) == ("Fix add() first.", ["calc.py"])
    diff = view.steps[3].actions[0].checkpoint
    assert diff is not None and (diff.files, diff.added, diff.removed) == (["calc.py"], 1, 1)
    assert ("add", "+    return a + b") in diff.lines and ("hunk", "@@ -1 +1 @@") in diff.lines


def test_the_chart_is_cumulative_and_stops_the_cost_line_at_an_unknown_cost() -> None:
    records = [step(1).model_dump(mode="json"), step(2, cost=0.02).model_dump(mode="json")]
    records.append(step(3, cost=None).model_dump(mode="json"))
    points = chart_points(build_view(records).steps)
    assert [(p.cost, p.tokens) for p in points] == [(0.01, 1010), (0.03, 2020), (None, 3030)]
    svg = cost_chart(points)
    assert svg.startswith("<svg") and svg.count('class="dot cost"') == 2 and svg.count('class="dot tokens"') == 3
    assert "step 3: unknown, 3,030 tokens so far" in svg
    assert cost_chart([]) == "" and 'class="line' not in cost_chart([Point("1", 0.5, 10)])


def test_text_from_the_trace_is_escaped(tmp_path: Path) -> None:
    record = StepRecord(step=1, intent='<script>alert("x")</script><img src=x onerror=alert(1)>')
    html = Pages().item(build_view([json.loads(record.model_dump_json())]).timeline[0])
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html


def test_an_end_record_shows_the_outcome_handoff_and_the_commit_made_at_the_end() -> None:
    end = EndRecord(
        outcome="handed_off",
        reason="budget: the step limit (3) was reached",
        steps=3,
        head_sha="abc",
        checkpoint=Checkpoint.of("abc", DIFF),
    ).model_dump(mode="json")
    end["handoff"] = {"done": ["edited calc.py"], "not_done": ["tests is fail"], "question": "Which sum?"}
    html = Pages().section("outcome", build_view([end]), {})
    assert 'data-status="handed_off"' in html and "edited calc.py" in html and "Which sum?" in html
    assert "Commit made at the end" in html and "+    return a + b" in html
