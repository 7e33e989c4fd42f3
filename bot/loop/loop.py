"""The execution loop: `run()` repeats `step()`; every way out is a `RunEnded` carrying the outcome.

The model only proposes the next action. The harness decides whether it runs (policy, patch gate,
limits), runs the project's own checks, and decides when the task is done: `finish` is verified by
running every contract check. Each step is appended to the trace as it happens.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ValidationError

from bot.checks.models import CheckResult, CheckRun
from bot.context.base import ContextProvider, Query
from bot.contract.models import Scope, TaskContract
from bot.errors import AiFixError, PolicyViolation
from bot.loop import context as ctx
from bot.loop.editor import edit
from bot.loop.records import (
    TOOL_INPUTS,
    ActionRecord,
    AskHumanInput,
    BaselineRecord,
    EditInput,
    EndRecord,
    Expectation,
    FinishInput,
    ModelCall,
    Observation,
    PlanInput,
    RequestMeta,
    RunChecksInput,
    SearchInput,
    StartRecord,
    StepRecord,
)
from bot.loop.result import Cost, Handoff, Outcome, Plan, RunResult
from bot.loop.search import search_code
from bot.loop.trace import Trace
from bot.model.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
    estimate_tokens,
)
from bot.redact import redact
from bot.workspace.gate import PatchGate
from bot.workspace.models import DiffStats

FRAME = re.compile(r"([\w./-]+\.[A-Za-z0-9]+):(\d+)")
"""`path:line` in a failure summary: where the failing area is."""


class Workspace(Protocol):
    path: Path
    branch: str
    base_sha: str
    head_sha: str

    def diff(self) -> str: ...
    def stats(self) -> DiffStats: ...
    def read_base(self, path: str) -> bytes | None: ...
    def checkpoint(self, message: str, *, gate: PatchGate | None = None) -> str | None: ...
    def rollback(self) -> str: ...


class Checks(Protocol):
    """The contract's setup and checks, bound to a sandbox (see `bot.loop.harness`)."""

    def setup(self) -> str | None:
        """Run the setup commands; what is missing when one fails, else None."""

    def baseline(self, commit: str) -> CheckRun: ...

    def run(self, names: list[str] | None, *, commit: str, changed_files: list[str]) -> CheckRun: ...


class LoopConfig(BaseModel):
    model: str
    """The model for steps (see `bot.model.routing`)."""
    small_model: str
    """The model that compresses history."""
    model_reason: str = ""
    repo_map_tokens: int = 1500
    slice_tokens: int = 1500
    history_tokens: int = 1200
    """Above this the older conclusions are compressed by the small model."""
    reserve: float = 0.1
    """Share of the cost and wall-time budget kept for the final checks and the handoff."""
    max_tokens: int = 4096


class RunEnded(Exception):
    """Every way out of the loop; `run()` turns it into the RunResult."""

    def __init__(self, outcome: Outcome, reason: str, *, question: str = "", next_steps: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.outcome, self.reason, self.question, self.next_steps = outcome, reason, question, list(next_steps)


def clarification_reason(contract: TaskContract) -> str:
    return "the task contract is incomplete: " + "; ".join(contract.missing)


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def failing(run: CheckRun) -> list[CheckResult]:
    return [r for r in run.results if r.status != "pass"]


def signature(run: CheckRun) -> str:
    """What makes two failures "the same": each failing check's normalised signature."""
    return " | ".join(sorted(f"{r.name}:{r.signature or r.status}" for r in failing(run)))


def render_run(run: CheckRun) -> str:
    """One line per check; the failure details are shown once, under "Latest check failure"."""
    return "\n".join(f"{r.name}: {r.status} (exit {r.exit_code}, {r.duration_s:.1f}s)" for r in run.results)


def expectation_met(expect: str, run: CheckRun) -> Expectation:
    """Judge "tests: test_add passes" / "lint fails" against what ran; unclear wording judges by overall pass."""
    lowered = expect.casefold()
    wants_fail = bool(re.search(r"\b(fail|fails|failing|error)\b", lowered)) and not re.search(
        r"\bno longer fail", lowered
    )
    named = [r for r in run.results if r.name.casefold() in lowered]
    tests = [t for r in run.results for t in r.tests if t.id.rsplit("::", 1)[-1].casefold() in lowered]
    if tests:
        passed = all(t.status == "pass" for t in tests)
        actual = ", ".join(f"{t.id} {t.status}" for t in tests)
    else:
        pool = named or run.results
        passed = all(r.status == "pass" for r in pool)
        actual = ", ".join(f"{r.name} {r.status}" for r in pool)
    return Expectation(expect=expect, met=passed != wants_fail, actual=actual)


class Loop:
    def __init__(
        self,
        contract: TaskContract,
        model: Model,
        workspace: Workspace,
        checks: Checks,
        context: ContextProvider,
        trace: Trace,
        config: LoopConfig,
        *,
        secrets: Sequence[str] = (),
        progress: Callable[[str], None] = lambda _line: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.contract, self.model, self.workspace, self.checks = contract, model, workspace, checks
        self.context, self.trace, self.config = context, trace, config
        self.secrets, self.progress, self.clock = list(secrets), progress, clock
        self.gate = PatchGate(workspace.path, contract.scope, contract.budget, base_reader=workspace.read_base)
        self.plan: Plan | None = None
        self.conclusions: list[str] = []
        self.ruled_out: list[str] = []
        self.done: list[str] = []
        self.attempt_edits: list[str] = []
        """Edits since the last good checkpoint: the approach being tried."""
        self.last_results: list[str] = []
        self.failures: dict[str, int] = {}
        self.narrowed = False
        self.scope_note = "allow " + ", ".join(contract.scope.allow) + "; deny " + ", ".join(contract.scope.deny)
        self.baseline: CheckRun | None = None
        self.latest: CheckRun | None = None
        self.good: dict[str, str] = {}
        """Each check's status at the last good checkpoint."""
        self.final: CheckRun | None = None
        self.summary, self.risks = "", list[str]()
        self.usage, self.cost, self.steps = Usage(), 0.0, 0
        self.cost_known = True
        self.started = clock()
        self._stats: DiffStats | None = None
        self._diff: str | None = None
        """The change against the base, asked of git again only after the workspace changed."""
        self._retrieved: tuple[Query, str] | None = None
        self.stable = ""
        self.environment_ok = False
        """Set once setup and the baseline ran: only then are final checks worth running."""

    # ---- the loop ----------------------------------------------------------------------

    def run(self) -> RunResult:
        try:
            self.start()
            while True:
                self.step()
        except RunEnded as end:
            return self.conclude(end)
        except AiFixError as exc:
            return self.conclude(RunEnded("failed", f"{type(exc).__name__}: {exc}"))
        except BaseException as exc:
            # A crash or an interruption (Ctrl-C, /agent stop) still leaves the edits on the branch and the end in the trace.
            with contextlib.suppress(Exception):
                if self.environment_ok:
                    self.save_work()
                self.trace.append(
                    EndRecord(
                        outcome="failed",
                        reason=f"interrupted: {type(exc).__name__}: {exc}",
                        steps=self.steps,
                        head_sha=self.workspace.head_sha,
                    )
                )
            raise

    def start(self) -> None:
        self.trace.append(
            StartRecord(
                title=self.contract.title,
                model=self.config.model,
                small_model=self.config.small_model,
                model_reason=self.config.model_reason,
                branch=self.workspace.branch,
                base_sha=self.workspace.base_sha,
            )
        )
        if self.contract.status == "needs_clarification":
            raise RunEnded("needs_clarification", clarification_reason(self.contract))
        self.progress(f"model: {self.config.model_reason or self.config.model}")
        self.progress("phase: setup")
        if (missing := self.checks.setup()) is not None:
            self.trace.append(BaselineRecord(setup_problem=missing))
            raise RunEnded(
                "handed_off", f"environment error during setup: {missing}", next_steps=[f"fix the setup: {missing}"]
            )
        self.progress("phase: baseline checks")
        self.baseline = self.latest = self.checks.baseline(self.workspace.base_sha)
        self.trace.append(BaselineRecord(checks=self.baseline))
        for r in self.baseline.results:
            self.progress(f"baseline: {r.name} {r.status}")
        broken = [r for r in self.baseline.results if r.status == "error"]
        if broken:
            named = "; ".join(f"check '{r.name}' could not run: {r.reason or first_line(r.output)}" for r in broken)
            raise RunEnded(
                "handed_off",
                f"environment error: {named}",
                next_steps=[
                    "install what is missing in the sandbox image or add it to the contract's setup, then retry"
                ],
            )
        self.good = {r.name: r.status for r in self.baseline.results}
        self.environment_ok = True
        self.stable = redact(
            ctx.stable_layer(self.contract, self.context.repo_map(self.config.repo_map_tokens)),
            self.secrets,
            key_values=False,
        )
        self.progress("phase: steps")

    def step(self) -> None:
        self.check_limits()
        began = self.clock()
        record = StepRecord(step=self.steps + 1)
        try:
            self.compress_history(record)
            response = self.ask(self.request(record), record)
            self.steps += 1
            record.intent = response.text
            self.last_results = []
            if not response.tool_calls:
                self.observe(
                    record,
                    ActionRecord(
                        tool="",
                        decision="malformed",
                        observation=Observation(
                            ok=False, text="your answer had no tool call; answer with one of the tools"
                        ),
                    ),
                )
            for call in response.tool_calls:
                self.act(call, response.text, record)
        finally:
            record.duration_s = round(self.clock() - began, 4)
            self.trace.append(record)

    # ---- context and model -------------------------------------------------------------

    def stats(self) -> DiffStats:
        if self._stats is None:
            self._stats = self.workspace.stats()
        return self._stats

    def diff(self) -> str:
        if self._diff is None:
            self._diff = self.workspace.diff() if self.stats().files else ""
        return self._diff

    def changed(self) -> None:
        self._stats = self._diff = None

    def request(self, record: StepRecord) -> ModelRequest:
        diff = self.diff()
        failure = "\n".join(r.summary or r.reason for r in failing(self.latest)) if self.latest else ""
        focus = ctx.focus_layer(scope_note=self.scope_note, slices=self.relevant_code(failure, diff))
        volatile = ctx.volatile_layer(
            plan=self.plan,
            diff=diff,
            failure=failure,
            last_results="\n\n".join(self.last_results),
            limits=self.limits_left(),
        )
        history = ctx.history_layer(self.conclusions, self.ruled_out)
        record.context_tokens = {
            "stable": estimate_tokens(self.stable),
            "volatile": estimate_tokens(focus + volatile),
            "history": estimate_tokens(history),
        }
        # The slow part of the volatile layer gets the second cache breakpoint: it stays the same until an edit or a check run.
        content = [
            {
                "type": "text",
                "text": redact(focus, self.secrets, key_values=False),
                "cache_control": {"type": "ephemeral"},
            },
            {"type": "text", "text": redact(history + "\n\n" + volatile, self.secrets, key_values=False)},
        ]
        # The plan comes first: forced through tool_choice rather than refusing edits afterwards.
        choice = {"type": "tool", "name": "plan"} if self.plan is None else {"type": "any"}
        return ModelRequest(
            model=self.config.model,
            system=self.stable,
            messages=[{"role": "user", "content": content}],
            tools=ctx.tool_definitions(),
            tool_choice=choice,
            max_tokens=self.config.max_tokens,
        )

    def relevant_code(self, failure: str, diff: str) -> str:
        """Retrieval for the current failure and diff; the index is refreshed and asked again only after they changed."""
        criteria = "\n".join(c.text for c in self.contract.acceptance_criteria)
        query = Query(text=f"{self.contract.title}\n{self.contract.goal}\n{criteria}", failure=failure, diff=diff)
        if self._retrieved is None or self._retrieved[0] != query:
            self.context.refresh()
            self._retrieved = (query, self.context.retrieve(query, self.config.slice_tokens).rendered)
        return self._retrieved[1]

    def ask(self, request: ModelRequest, record: StepRecord) -> ModelResponse:
        began = self.clock()
        response = self.model.complete(request)
        record.model_s += self.clock() - began
        record.model_calls.append(
            ModelCall(
                request=RequestMeta(
                    purpose=request.purpose,
                    model=request.model,
                    tool_choice=request.tool_choice,
                    tools=[t["name"] for t in request.tools],
                    chars=len(request.system) + sum(len(str(m["content"])) for m in request.messages),
                ),
                response=response,
            )
        )
        record.usage = record.usage + response.usage
        self.usage = self.usage + response.usage
        if response.cost_usd is None:
            self.cost_known, record.cost_usd = False, None
        else:
            self.cost += response.cost_usd
            record.cost_usd = None if record.cost_usd is None else record.cost_usd + response.cost_usd
        what = "answered" if request.purpose == "step" else "compressed the history"
        self.progress(f"step {self.steps + 1}: {response.model} {what}; spend so far {self.spend()}")
        return response

    def compress_history(self, record: StepRecord) -> None:
        """Older conclusions become a few lines written by the small model; ruled-out approaches stay verbatim."""
        if len(self.conclusions) < 6 or estimate_tokens("\n".join(self.conclusions)) <= self.config.history_tokens:
            return
        older, recent = self.conclusions[:-3], self.conclusions[-3:]
        notes = redact("\n".join(f"- {c}" for c in older), self.secrets, key_values=False)
        response = self.ask(
            ModelRequest(
                model=self.config.small_model,
                system=ctx.prompt("compress.md"),
                purpose="compress",
                messages=[{"role": "user", "content": notes}],
                max_tokens=1024,
            ),
            record,
        )
        lines = [line.removeprefix("- ").strip() for line in response.text.splitlines() if line.strip()]
        self.conclusions = [f"(earlier) {line}" for line in lines] + recent

    # ---- actions -----------------------------------------------------------------------

    def observe(self, record: StepRecord, action: ActionRecord) -> None:
        record.actions.append(action)
        state = "ok" if action.observation.ok else "error"
        self.last_results.append(f"[{action.tool or 'answer'}] {state}: {action.observation.text}")

    def act(self, call: ToolCall, intent: str, record: StepRecord) -> None:
        schema = TOOL_INPUTS.get(call.name)
        if schema is None:
            text = f"unknown tool {call.name!r}; the tools are: {', '.join(TOOL_INPUTS)}"
            return self.observe(
                record,
                ActionRecord(
                    tool=call.name, input=call.input, decision="malformed", observation=Observation(ok=False, text=text)
                ),
            )
        try:
            args = schema.model_validate(call.input)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())
            text = f"malformed input for {call.name}: {problems}; send the fields its schema asks for"
            return self.observe(
                record,
                ActionRecord(
                    tool=call.name, input=call.input, decision="malformed", observation=Observation(ok=False, text=text)
                ),
            )
        if self.plan is None and not isinstance(args, (PlanInput, AskHumanInput)):
            text = "no plan yet: call `plan` first (steps with done_when, and the files you expect to change)"
            return self.observe(
                record,
                ActionRecord(
                    tool=call.name, input=call.input, decision="refused", observation=Observation(ok=False, text=text)
                ),
            )
        action = ActionRecord(
            tool=call.name, input=call.input, decision="executed", observation=Observation(ok=True, text="")
        )
        try:
            if isinstance(args, PlanInput):
                action.observation = self.do_plan(args)
            elif isinstance(args, EditInput):
                action.observation = self.do_edit(args, intent)
            elif isinstance(args, SearchInput):
                action.observation = Observation(
                    ok=True,
                    text=redact(
                        search_code(self.workspace.path, args.query, args.path_glob), self.secrets, key_values=False
                    ),
                )
            elif isinstance(args, RunChecksInput):
                action.observation = self.do_run_checks(args, action, record)
            elif isinstance(args, FinishInput):
                action.observation = self.do_finish(args, action, record)
            elif isinstance(args, AskHumanInput):
                action.observation = Observation(ok=True, text="handed to a human")
                raise RunEnded(
                    "handed_off", f"the model asked for help: {args.reason or args.question}", question=args.question
                )
        except RunEnded as end:
            if not action.observation.text:
                action.observation = Observation(ok=True, text=f"the run ends: {end.reason}")
            raise
        finally:
            if not action.observation.ok and action.decision == "executed":
                action.decision = "refused"
            self.observe(record, action)

    def do_plan(self, args: PlanInput) -> Observation:
        refused = [d for d in (self.gate.check_path(p) for p in args.impact) if not d.allowed]
        if refused:
            return Observation(
                ok=False,
                text="plan refused, its impact leaves the scope: "
                + "; ".join(d.reason for d in refused)
                + "; plan again",
            )
        self.plan = Plan(steps=args.steps, impact=args.impact)
        self.conclusions.append(
            f"planned {len(args.steps)} steps; expected to change {', '.join(args.impact) or 'nothing named'}"
        )
        self.progress(f"plan: {len(args.steps)} steps, impact {', '.join(args.impact)}")
        return Observation(ok=True, text="plan recorded")

    def do_edit(self, args: EditInput, intent: str) -> Observation:
        observation = edit(self.workspace, self.gate, args, self.stats())
        if args.command != "view":
            what = f"{args.command} {args.path}" + (f" ({first_line(intent)})" if intent else "")
            if observation.ok:
                self.changed()
                self.attempt_edits.append(what)
                self.conclusions.append(f"step {self.steps}: {what}")
            else:
                self.conclusions.append(f"step {self.steps}: {what} refused: {first_line(observation.text)}")
            self.progress(f"edit: {what}: {'ok' if observation.ok else 'refused'}")
        observation.text = redact(observation.text, self.secrets, key_values=False)
        return observation

    def run_checks(self, names: list[str] | None, record: StepRecord) -> CheckRun:
        began = self.clock()
        run = self.checks.run(names, commit=self.workspace.head_sha, changed_files=[f.path for f in self.stats().files])
        self.changed()  # checks may write files in the workspace
        record.checks_s += self.clock() - began
        self.latest = run
        for r in run.results:
            self.progress(f"checks: {r.name} {r.status}")
        return run

    def do_run_checks(self, args: RunChecksInput, action: ActionRecord, record: StepRecord) -> Observation:
        unknown = [n for n in args.names or [] if self.contract.check(n) is None]
        if unknown:
            names = ", ".join(c.name for c in self.contract.checks)
            return Observation(
                ok=False, text=f"no such check: {', '.join(unknown)}; the contract's checks are: {names}"
            )
        run = action.checks = self.run_checks(args.names, record)
        action.expectation = expectation_met(args.expect, run) if args.expect else None
        note = self.judge(run, action.expectation)
        text = render_run(run)
        if action.expectation:
            e = action.expectation
            text += f"\nexpected: {e.expect} — {'met' if e.met else 'NOT met'} ({e.actual})"
        return Observation(ok=True, text=redact(text + note, self.secrets, key_values=False))

    def do_finish(self, args: FinishInput, action: ActionRecord, record: StepRecord) -> Observation:
        stats = self.stats()
        if not stats.files:
            return Observation(
                ok=False, text="finish refused: nothing has changed yet; make the change the contract asks for"
            )
        self.progress("phase: verifying finish")
        run = action.checks = self.run_checks(None, record)
        violations = self.gate.violations(self.stats())  # after the checks: they may have written files
        if run.passed and not violations:
            self.final, self.summary, self.risks = run, args.summary, args.risks
            action.observation = Observation(ok=True, text="verified: every contract check passes")
            raise RunEnded(
                "accepted", f"all {len(run.results)} contract checks pass and the change stays within scope and limits"
            )
        problems = [f"{r.name} {r.status}" for r in failing(run)] + [v.reason for v in violations]
        note = self.judge(run, None)
        text = "finish refused: " + "; ".join(problems) + "\n" + render_run(run) + note
        return Observation(ok=False, text=redact(text, self.secrets, key_values=False))

    # ---- policy: progress, repeated failures, limits -----------------------------------

    def judge(self, run: CheckRun, expectation: Expectation | None) -> str:
        """Keep progress as a checkpoint; count repeated failures; roll back and narrow, then hand off."""
        wrong = expectation is not None and not expectation.met
        improved = any(r.status == "pass" and self.good.get(r.name) != "pass" for r in run.results)
        regressed = [r.name for r in failing(run) if self.good.get(r.name) == "pass"]
        if improved and not regressed and not wrong:
            try:
                sha = self.workspace.checkpoint(
                    f"ai-fix step {self.steps}: " + "; ".join(self.attempt_edits or ["checks pass"]), gate=self.gate
                )
            except PolicyViolation as exc:
                return f"\nnot kept as a checkpoint: {exc}"
            self.good.update({r.name: r.status for r in run.results})
            self.done += self.attempt_edits
            self.conclusions.append(
                f"step {self.steps}: checks improved ({', '.join(r.name for r in run.results if r.status == 'pass')} pass); checkpoint {(sha or '')[:10]}"
            )
            self.attempt_edits, self.failures = [], {}
            return "\nprogress kept as a checkpoint"
        if not failing(run) and not wrong:
            return ""
        key = signature(run) + (f" | expectation not met: {expectation.expect}" if wrong and expectation else "")
        self.failures[key] = self.failures.get(key, 0) + 1
        self.conclusions.append(f"step {self.steps}: still failing ({key}), attempt {self.failures[key]}")
        if self.failures[key] < self.contract.budget.max_retries_same_failure:
            return ""
        return self.shrink_or_hand_off(key, run)

    def shrink_or_hand_off(self, key: str, run: CheckRun) -> str:
        approach = "; ".join(self.attempt_edits) or "re-running the checks without a new change"
        why = first_line("\n".join(r.summary or r.reason for r in failing(run))) or key
        self.ruled_out.append(f"{approach} — still fails: {why}")
        self.attempt_edits, self.failures = [], {}
        if self.narrowed:
            raise RunEnded(
                "handed_off",
                f"the same failure ({key}) came back after rolling back and narrowing the scope ({self.scope_note})",
            )
        self.workspace.rollback()
        self.changed()
        self.latest = None
        area = self.failing_area(run)
        if area:
            self.gate = PatchGate(
                self.workspace.path,
                Scope(allow=area, deny=self.contract.scope.deny),
                self.contract.budget,
                base_reader=self.workspace.read_base,
            )
            self.scope_note = "narrowed to the failing area: " + ", ".join(area)
        self.narrowed = True
        self.conclusions.append(
            f"step {self.steps}: same failure {self.contract.budget.max_retries_same_failure} times; rolled back to the last good checkpoint; {self.scope_note}"
        )
        self.progress(f"policy: rolled back; {self.scope_note}")
        return f"\nthe same failure repeated: the workspace was rolled back to the last good checkpoint and the scope is now {self.scope_note}"

    def failing_area(self, run: CheckRun) -> list[str]:
        """Files the failure points at (failing tests, traceback frames) and the plan's impact, within the scope."""
        candidates = [t.file for r in failing(run) for t in r.tests if t.file and t.status != "pass"]
        candidates += [m.group(1) for r in failing(run) for m in FRAME.finditer(r.summary + "\n" + r.output)]
        candidates += self.plan.impact if self.plan else []
        root = self.workspace.path
        area: list[str] = []
        for path in candidates:
            path = path.removeprefix("./")
            if path not in area and (root / path).is_file() and self.gate.check_path(path).allowed:
                area.append(path)
        return area

    def spend(self) -> str:
        return f"${self.cost:.4f}" if self.cost_known else "unknown (model not in the price table)"

    def limits_left(self) -> str:
        b, stats = self.contract.budget, self.stats()
        cost = f"${self.cost:.2f}/${b.max_cost_usd:.2f}" if self.cost_known else "unknown"
        return (
            f"steps {self.steps}/{b.max_steps}, cost {cost}, wall {(self.clock() - self.started) / 60:.1f}/{b.max_wall_minutes} min, "
            f"files {len(stats.files)}/{b.max_files_changed}, lines {stats.lines}/{b.max_lines_changed}"
        )

    def check_limits(self) -> None:
        """Before every model call; the reserve leaves room for the final checks and the handoff."""
        b, keep = self.contract.budget, 1 - self.config.reserve
        stats = self.stats()
        reason = ""
        if self.steps >= b.max_steps:
            reason = f"the step limit ({b.max_steps}) was reached"
        elif self.cost_known and self.cost >= b.max_cost_usd * keep:
            reason = f"the cost limit (${b.max_cost_usd:g}, {self.config.reserve:.0%} kept in reserve) was reached at ${self.cost:.4f}"
        elif self.clock() - self.started >= b.max_wall_minutes * 60 * keep:
            reason = (
                f"the wall-time limit ({b.max_wall_minutes} min, {self.config.reserve:.0%} kept in reserve) was reached"
            )
        elif len(stats.files) > b.max_files_changed or stats.lines > b.max_lines_changed:
            reason = (
                f"the change ({len(stats.files)} files, {stats.lines} lines) is over the budget's file or line limit"
            )
        if reason:
            raise RunEnded(
                "handed_off",
                f"budget: {reason}; the work so far is saved on the branch",
                question="Continue from the branch, or raise the budget in .github/ai-fix.yml and retry?",
            )

    # ---- the end -----------------------------------------------------------------------

    def save_work(self) -> str:
        """Commit whatever is left so the branch holds it; what the gate refuses is rolled back instead."""
        try:
            self.workspace.checkpoint(f"ai-fix: work in progress at step {self.steps} (not verified)", gate=self.gate)
            return ""
        except PolicyViolation as exc:
            self.workspace.rollback()
            return f"changes outside the policy were dropped ({exc})"

    def conclude(self, end: RunEnded) -> RunResult:
        notes = []
        if end.outcome == "accepted":
            self.workspace.checkpoint(f"ai-fix: {self.contract.title}", gate=self.gate)
        elif self.environment_ok:
            if note := self.save_work():
                notes.append(note)
            stats = self.workspace.stats()
            if stats.files:
                self.progress("phase: final checks")
                self.final = self.checks.run(
                    None, commit=self.workspace.head_sha, changed_files=[f.path for f in stats.files]
                )
        stats = self.workspace.stats()
        not_done = (
            [f"{r.name} is {r.status}: {first_line(r.summary or r.reason or r.output)}" for r in failing(self.final)]
            if self.final
            else []
        )
        result = RunResult(
            outcome=end.outcome,
            reason=end.reason,
            contract=self.contract,
            branch=self.workspace.branch,
            base_sha=self.workspace.base_sha,
            head_sha=self.workspace.head_sha,
            baseline=self.baseline,
            final=self.final,
            diff=stats,
            diff_text=redact(self.workspace.diff(), self.secrets),
            plan=self.plan,
            model_summary=self.summary,
            risks=self.risks,
            handoff=Handoff(
                done=self.done + self.attempt_edits,
                not_done=not_done + notes,
                ruled_out=self.ruled_out,
                question=end.question,
                next_steps=end.next_steps,
            ),
            cost=Cost(
                model=self.config.model,
                small_model=self.config.small_model,
                input_tokens=self.usage.input_tokens,
                output_tokens=self.usage.output_tokens,
                cache_read_tokens=self.usage.cache_read_tokens,
                cache_write_tokens=self.usage.cache_write_tokens,
                usd=round(self.cost, 6) if self.cost_known else None,
                wall_s=round(self.clock() - self.started, 3),
            ),
            steps=self.steps,
        )
        self.trace.append(
            EndRecord(
                outcome=result.outcome,
                reason=result.reason,
                steps=result.steps,
                head_sha=result.head_sha,
                final=self.final,
            )
        )
        self.progress(f"outcome: {result.outcome} — {result.reason}")
        return result
