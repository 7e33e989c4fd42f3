"""What the page shows, built from the trace's records alone.

Records are read as plain JSON, not as the loop's models, so a trace written by an older or newer
ai-fix still renders: fields this module does not know are kept in `extras` and shown as they are,
and a record of an unknown kind becomes a generic entry of the timeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.viewer.chart import Point, cost_chart
from bot.viewer.tracefile import Record
from bot.vocabulary import RUNNING

KNOWN = {
    "start": {"kind", "title", "model", "small_model", "model_reason", "branch", "base_sha", "contract"},
    "baseline": {"kind", "setup_problem", "checks"},
    "step": {
        "kind",
        "step",
        "context_tokens",
        "model_calls",
        "intent",
        "actions",
        "usage",
        "cost_usd",
        "duration_s",
        "model_s",
        "checks_s",
    },
    "end": {
        "kind",
        "outcome",
        "reason",
        "steps",
        "head_sha",
        "final",
        "checkpoint",
        "diff",
        "handoff",
        "summary",
        "risks",
        "cost",
    },
}
ACTION_KEYS = {"tool", "input", "decision", "observation", "checks", "expectation", "checkpoint"}
CONTRACT_KEYS = {"status", "missing", "title", "goal", "non_goals", "constraints", "acceptance_criteria", "scope"}
CONTRACT_KEYS |= {"checks", "budget", "setup"}
STATUS_ORDER = ("killed", "timeout", "error", "fail", "flaky", "not_run", "pass")
"""Worst first: a step's checks are summed up by the worst status among them."""


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def extras(record: dict[str, Any], known: set[str]) -> dict[str, Any]:
    """The fields this viewer does not render itself (shown generically)."""
    return {k: v for k, v in record.items() if k not in known}


@dataclass
class CheckView:
    name: str
    status: str
    command: str = ""
    duration_s: float | None = None
    exit_code: Any = None
    summary: str = ""
    output: str = ""
    dropped_bytes: float | None = None
    failing_tests: list[dict[str, Any]] = field(default_factory=list)


def check_views(run: Any) -> list[CheckView]:
    out = []
    for r in as_list(as_dict(run).get("results")):
        r = as_dict(r)
        out.append(
            CheckView(
                name=text(r.get("name")) or "(unnamed)",
                status=text(r.get("status")) or "unknown",
                command=text(r.get("command")),
                duration_s=as_num(r.get("duration_s")),
                exit_code=r.get("exit_code"),
                summary=text(r.get("summary")) or text(r.get("reason")),
                output=text(r.get("output")),
                dropped_bytes=as_num(r.get("dropped_bytes")),
                failing_tests=[
                    t for t in map(as_dict, as_list(r.get("tests"))) if t.get("status") in ("fail", "error")
                ],
            )
        )
    return out


def worst(checks: Sequence[CheckView]) -> str:
    statuses = {c.status for c in checks}
    return next((s for s in STATUS_ORDER if s in statuses), checks[0].status if checks else "")


@dataclass
class DiffView:
    sha: str
    lines: list[tuple[str, str]]
    """(css class, line) for each line of the unified diff."""
    files: list[str]
    added: int
    removed: int
    dropped_chars: float | None


def diff_view(checkpoint: Any) -> DiffView | None:
    cp = as_dict(checkpoint)
    if not cp:
        return None
    lines, files, added, removed = [], [], 0, 0
    for line in text(cp.get("diff")).splitlines():
        if line.startswith("diff --git "):
            files.append(line.split(" b/", 1)[-1])
            kind = "file"
        elif line.startswith(("+++", "---", "index ", "new file", "deleted file", "old mode", "new mode")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind, added = "add", added + 1
        elif line.startswith("-"):
            kind, removed = "del", removed + 1
        else:
            kind = "ctx"
        lines.append((kind, line))
    return DiffView(text(cp.get("sha")), lines, files, added, removed, as_num(cp.get("dropped_chars")))


@dataclass
class ActionView:
    tool: str
    label: str
    decision: str
    ok: bool
    observation: str
    input: dict[str, Any]
    checks: list[CheckView]
    expectation: dict[str, Any]
    checkpoint: DiffView | None
    extras: dict[str, Any]


def action_label(tool: str, args: dict[str, Any]) -> str:
    """The few words that say what the call did; the whole input is shown below it."""
    if tool == "plan":
        return f"{len(as_list(args.get('steps')))} plan steps"
    if tool == "str_replace_based_edit_tool":
        return f"{text(args.get('command'))} {text(args.get('path'))}".strip()
    if tool == "search_code":
        return text(args.get("query")) + (f" in {text(args['path_glob'])}" if args.get("path_glob") else "")
    if tool == "run_checks":
        return ", ".join(map(text, as_list(args.get("names")))) or "every check"
    if tool == "ask_human":
        return text(args.get("question"))
    return ""


def action_view(raw: Any) -> ActionView:
    a = as_dict(raw)
    tool, args, obs = text(a.get("tool")), as_dict(a.get("input")), as_dict(a.get("observation"))
    return ActionView(
        tool=tool or "(no tool call)",
        label=action_label(tool, args),
        decision=text(a.get("decision")) or "unknown",
        ok=obs.get("ok") is True,
        observation=text(obs.get("text")),
        input=args,
        checks=check_views(a.get("checks")),
        expectation=as_dict(a.get("expectation")),
        checkpoint=diff_view(a.get("checkpoint")),
        extras=extras(a, ACTION_KEYS),
    )


@dataclass
class Spent:
    """What a step spent: tokens, money and time."""

    tokens_in: int
    tokens_out: int
    cost: float | None
    duration_s: float | None
    model_s: float | None
    checks_s: float | None


@dataclass
class StepView:
    index: int
    number: Any
    intent: str
    actions: list[ActionView]
    spent: Spent
    models: list[str]
    context_tokens: dict[str, Any]
    extras: dict[str, Any]
    kind: str = "step"

    @property
    def status(self) -> str:
        """The worst status of the step's checks; else whether an action was refused."""
        checks = [c for a in self.actions for c in a.checks]
        if checks:
            return worst(checks)
        if any(a.decision in ("refused", "malformed") for a in self.actions):
            return "refused"
        return "ok"

    @property
    def checkpoints(self) -> int:
        return sum(1 for a in self.actions if a.checkpoint)


@dataclass
class OtherView:
    """A record of a kind this viewer does not know, shown as it is."""

    index: int
    kind: str
    record: dict[str, Any]


def tokens(usage: Any) -> tuple[int, int]:
    """(every input token however billed, output tokens)."""
    u = as_dict(usage)
    prompt = sum(int(as_num(u.get(k)) or 0) for k in ("input_tokens", "cache_write_tokens", "cache_read_tokens"))
    return prompt, int(as_num(u.get("output_tokens")) or 0)


def step_view(index: int, r: dict[str, Any]) -> StepView:
    tokens_in, tokens_out = tokens(r.get("usage"))
    calls = [as_dict(c) for c in as_list(r.get("model_calls"))]
    return StepView(
        index=index,
        number=r.get("step", index + 1),
        intent=text(r.get("intent")),
        actions=[action_view(a) for a in as_list(r.get("actions"))],
        spent=Spent(
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost=as_num(r.get("cost_usd")),
            duration_s=as_num(r.get("duration_s")),
            model_s=as_num(r.get("model_s")),
            checks_s=as_num(r.get("checks_s")),
        ),
        models=[
            f"{text(as_dict(c.get('request')).get('model'))} ({text(as_dict(c.get('request')).get('purpose'))})"
            for c in calls
        ],
        context_tokens=as_dict(r.get("context_tokens")),
        extras=extras(r, KNOWN["step"]),
    )


@dataclass
class PlanView:
    step: Any
    approach: str
    steps: list[dict[str, Any]]
    impact: list[str]


def plan_view(steps: Sequence[StepView]) -> PlanView | None:
    """The plan in force: the last `plan` call the harness accepted, with the intent stated with it."""
    for s in reversed(steps):
        for a in reversed(s.actions):
            if a.tool == "plan" and a.decision == "executed" and a.ok:
                plan = [as_dict(p) for p in as_list(a.input.get("steps"))]
                return PlanView(s.number, s.intent, plan, [text(p) for p in as_list(a.input.get("impact"))])
    return None


@dataclass
class RunView:
    records: int
    start: dict[str, Any] | None = None
    contract: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    baseline_checks: list[CheckView] = field(default_factory=list)
    timeline: list[StepView | OtherView] = field(default_factory=list)
    end: dict[str, Any] | None = None
    final_checks: list[CheckView] = field(default_factory=list)
    final_checkpoint: DiffView | None = None
    plan: PlanView | None = None
    chart: str = ""
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Unknown fields of the start, baseline and end records."""

    @property
    def steps(self) -> list[StepView]:
        return [t for t in self.timeline if isinstance(t, StepView)]

    @property
    def status(self) -> str:
        return (text(self.end.get("outcome")) or "ended") if self.end is not None else RUNNING

    @property
    def latest_checks(self) -> list[CheckView]:
        """The checks after the change: the end's final run, else the latest run of a step."""
        if self.final_checks:
            return self.final_checks
        runs = [a.checks for s in self.steps for a in s.actions if a.checks]
        return runs[-1] if runs else []

    def evidence(self) -> list[tuple[str, CheckView | None, CheckView | None]]:
        """(check, on the base commit, after the change) for every check either run saw."""
        base = {c.name: c for c in self.baseline_checks}
        after = {c.name: c for c in self.latest_checks}
        names = list(dict.fromkeys([*base, *after]))
        return [(n, base.get(n), after.get(n)) for n in names]

    def totals(self) -> dict[str, Any]:
        spent = [s.spent for s in self.steps]
        costs = [s.cost for s in spent]
        return {
            "steps": len(spent),
            "tokens_in": sum(s.tokens_in for s in spent),
            "tokens_out": sum(s.tokens_out for s in spent),
            "cost": None if any(c is None for c in costs) else sum(c or 0.0 for c in costs),
            "seconds": sum(s.duration_s or 0.0 for s in spent),
        }


def build_view(records: Sequence[Record]) -> RunView:
    view = RunView(records=len(records))
    for record in records:
        kind = text(record.get("kind"))
        if kind == "start":
            view.start = record
            view.contract = as_dict(record.get("contract")) or None
        elif kind == "baseline":
            view.baseline = record
            view.baseline_checks = check_views(record.get("checks"))
        elif kind == "step":
            view.timeline.append(step_view(len(view.timeline), record))
        elif kind == "end":
            view.end = record
            view.final_checks = check_views(record.get("final"))
            view.final_checkpoint = diff_view(record.get("checkpoint"))
        else:
            view.timeline.append(OtherView(len(view.timeline), kind or "(no kind)", record))
        if kind in ("start", "baseline", "end"):
            view.extras[kind] = extras(record, KNOWN[kind])
    view.plan = plan_view(view.steps)
    view.chart = cost_chart(chart_points(view.steps))
    return view


def chart_points(steps: Sequence[StepView]) -> list[Point]:
    """Cumulative cost (None from the first step whose cost is unknown) and tokens after each step."""
    points, cost, total = [], 0.0, 0
    known = True
    for s in steps:
        known = known and s.spent.cost is not None
        cost += s.spent.cost or 0.0
        total += s.spent.tokens_in + s.spent.tokens_out
        points.append(Point(label=text(s.number), cost=cost if known else None, tokens=total))
    return points
