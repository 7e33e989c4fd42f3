"""`ai-fix run`: the whole loop on a local git repository, without GitHub (`ai-fix demo` runs through here too)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from bot.checks.models import SetupReport
from bot.commands.plans import PlanFile, describe_plan, load_approach, plan_path, save_plan
from bot.commands.toolkit import model_opener, model_override, toolkit
from bot.contract.approach import ApprovedApproach
from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.files import LocalRepoFiles, read_issue_file
from bot.contract.models import TaskContract
from bot.errors import ConfigError
from bot.loop.planning import PlanResult
from bot.loop.preflight import clarification_reason
from bot.loop.records import EndRecord
from bot.loop.result import RunResult
from bot.loop.session import ModelOpener, RunInput, plan_session, run_session
from bot.loop.trace import Trace
from bot.model.routing import choose_model
from bot.publish.render import render_pr_body
from bot.redact import redact, redact_json
from bot.secrets import held_secrets
from bot.settings import Settings, load_settings
from bot.vocabulary import NEEDS_CLARIFICATION, RUN_PHASE_WORDS, RunPhase
from bot.workspace import opening
from bot.workspace.branch import branch_name
from bot.workspace.git import Workspace
from bot.workspace.stale import claim, clear_dead_runs


def markdown_of(text: str) -> str:
    """Plain text as `# title` + body: the first line is the title (a leading `#` is dropped), the rest the body."""
    title, _, body = text.strip().partition("\n")
    title = title.lstrip("#").strip()
    return f"# {title}\n\n{body.strip() or title}\n"


def task_markdown(args: argparse.Namespace) -> str:
    """The task as `# title` + body, from --issue FILE.md or --task TEXT."""
    if args.issue:
        return read_issue_file(args.issue)
    if not args.task.strip():
        raise ConfigError("--task is empty: describe the task, e.g. --task 'divide() crashes on zero'")
    return markdown_of(args.task)


def describe_contract(contract: TaskContract) -> list[str]:
    lines = [f"contract: {contract.title} [{contract.status}]", f"  goal: {contract.goal}"]
    lines += [f"  criterion ({c.origin} · {c.kind}): {c.text}" for c in contract.acceptance_criteria]
    lines += [f"  check {c.name}: {c.run}" for c in contract.checks]
    lines += [f"  setup ({contract.setup_origin}): {command}" for command in contract.setup]
    lines.append(f"  scope: allow {', '.join(contract.scope.allow)}; deny {', '.join(contract.scope.deny)}")
    b = contract.budget
    lines.append(
        f"  budget: {b.max_steps} steps, ${b.max_cost_usd:.2f}, {b.max_wall_minutes} min, {b.max_files_changed} files, {b.max_lines_changed} lines"
    )
    lines += [f"  missing: {m}" for m in contract.missing]
    return lines


def write_outputs(result: RunResult, out: Path, secrets: list[str]) -> None:
    """pr.md (the body that would be posted) and evidence.json; trace.jsonl is already there."""
    body = render_pr_body(result, issue_number=result.contract.provenance.number or None)
    (out / "pr.md").write_text(redact(body, secrets))
    (out / "evidence.json").write_text(redact_json(result.evidence_json(), secrets, indent=2) + "\n")


class LineReporter:
    """Phases and lines printed as `[time] phase: ...` and `[time] ...`."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say

    def phase(self, phase: RunPhase) -> None:
        self.say(f"phase: {RUN_PHASE_WORDS[phase]}")

    def setup(self, report: SetupReport) -> None:
        self.say(f"setup: {report.describe()}")


class Local:
    """What a local run or plan starts from: the contract read at the repository's commit, printed; its secrets."""

    def __init__(self, markdown: str, repo: Path, out: Path, *, settings: Settings, say: Callable[[str], None]) -> None:
        self.repo, self.out, self.settings, self.say = repo, out, settings, say
        self.files = LocalRepoFiles(repo)
        self.contract = build_contract(snapshot_from_markdown(markdown, str(repo)), self.files)
        for line in describe_contract(self.contract):
            say(line)
        out.mkdir(parents=True, exist_ok=True)
        (out / "trace.jsonl").unlink(missing_ok=True)  # a new run into the same --out begins its trace afresh
        self.secrets = held_secrets(settings, repo=repo)

    @contextmanager
    def workspace(self, branch: str, *, keep_branch: bool = True) -> Iterator[Workspace]:
        """A worktree on `branch` in a directory of its own, claimed with this process's id: runs at once never
        collide, and what one killed midway left (its worktree, an empty branch of the same name) is cleared by the
        next run on the repository. It is removed afterwards; the branch stays in the repository if `keep_branch`."""
        jobs = self.settings.work_dir / "local"
        jobs.mkdir(parents=True, exist_ok=True)
        for note in clear_dead_runs(self.repo, jobs, branch):
            self.say(note)
        with tempfile.TemporaryDirectory(prefix="run-", dir=jobs, ignore_cleanup_errors=True) as job_dir:
            claim(Path(job_dir))
            workspace = opening.local(self.repo, Path(job_dir) / "job", branch=branch, ref=self.files.commit)
            self.say(f"workspace: branch {workspace.branch} at {workspace.base_sha[:12]}")
            try:
                yield workspace
            finally:
                workspace.remove(keep_branch=keep_branch)


def printer(stream: TextIO | None, label: str) -> Callable[[str], None]:
    tag = f" {label}" if label else ""

    def say(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}{tag}] {line}", file=stream or sys.stdout, flush=True)

    return say


def execute(
    markdown: str,
    repo: Path,
    out: Path,
    *,
    settings: Settings,
    model: ModelOpener,
    model_name: str | None,
    sandbox_kind: str,
    stream: TextIO | None = None,
    label: str = "",
    viewable: bool = True,
    approach: ApprovedApproach | None = None,
    loop_settings: Mapping[str, Any] | None = None,
) -> RunResult:
    """Contract, workspace, sandbox, loop, outputs; shared by `ai-fix run`, `ai-fix demo` (label "replay") and
    every run of `ai-fix eval` (which gives `loop_settings`, its --config's context sizes).

    `viewable`: say how to open the run in the viewer (not for the demo, whose trace is removed after it).
    `approach`: the approach of a plan to follow (`--approach N`).
    """
    say = printer(stream, label)
    local = Local(markdown, repo, out, settings=settings, say=say)
    contract, secrets = local.contract, local.secrets
    if contract.status == NEEDS_CLARIFICATION:
        # No branch, sandbox or model turn for a task that cannot start; the contract says what is missing.
        reason = clarification_reason(contract.missing)
        result = RunResult(outcome=NEEDS_CLARIFICATION, reason=reason, contract=contract)
        Trace(out / "trace.jsonl", secrets).append(
            EndRecord(outcome=result.outcome, reason=result.reason, steps=0, head_sha="")
        )
        write_outputs(result, out, secrets)
        say(f"done: {result.outcome}: {result.reason}")
        return result
    if approach is not None:
        contract = contract.model_copy(update={"approach": approach})
        say(f"approach: {approach.number}: {approach.approach.title}")
    # Opened before any branch is made: a missing key or a bad model spec stops the run here.
    opened = model(choose_model(contract, settings.model, settings.small_model, override=model_name))
    with local.workspace(branch_name(None, contract.title)) as workspace:
        if viewable:
            say(f"follow the run in a browser: ai-fix view {out / 'trace.jsonl'}")
        run = RunInput(
            contract,
            workspace,
            repo=str(repo),
            secrets=secrets,
            trace_path=out / "trace.jsonl",
            reporter=LineReporter(say),
            model_override=model_name,
            loop_settings=loop_settings,
        )
        result = run_session(run, toolkit(settings, model=lambda _choice: opened, sandbox=sandbox_kind))
    write_outputs(result, out, secrets)
    cost = "unknown" if result.cost.usd is None else f"${result.cost.usd:.4f}"
    say(
        f"done: {result.outcome} after {result.steps} steps, {result.diff.added}+/{result.diff.removed}- lines, cost {cost}"
    )
    say(f"branch {result.branch} in {repo}; pr.md, trace.jsonl and evidence.json in {out}")
    return result


def plan_only(
    markdown: str,
    repo: Path,
    out: Path,
    *,
    settings: Settings,
    model: ModelOpener,
    model_name: str | None,
    sandbox_kind: str,
    stream: TextIO | None = None,
) -> PlanResult:
    """`--plan-only`: the planning phase on a worktree (its branch deleted after), the plan printed and kept."""
    say = printer(stream, "")
    local = Local(markdown, repo, out, settings=settings, say=say)
    contract = local.contract
    if contract.status == NEEDS_CLARIFICATION:
        reason = clarification_reason(contract.missing)
        say(f"done: needs_clarification: {reason}")
        return PlanResult(outcome=NEEDS_CLARIFICATION, reason=reason)
    opened = model(choose_model(contract, settings.model, settings.small_model, override=model_name))
    with local.workspace(branch_name(None, contract.title) + "-plan", keep_branch=False) as workspace:
        run = RunInput(
            contract,
            workspace,
            repo=str(repo),
            secrets=local.secrets,
            trace_path=out / "trace.jsonl",
            reporter=LineReporter(say),
            model_override=model_name,
        )
        result = plan_session(run, toolkit(settings, model=lambda _choice: opened, sandbox=sandbox_kind))
    for line in describe_plan(result):
        say(line)
    if result.proposal is not None:
        plan = PlanFile(
            repo=str(repo),
            commit=local.files.commit,
            title=contract.title,
            proposal=result.proposal,
            estimates=result.estimates,
            cost=result.cost,
        )
        path = plan_path(settings.work_dir, repo, local.files.commit, markdown)
        save_plan(path, plan)
        (out / "plan.json").write_text(redact_json(plan.model_dump(mode="json"), local.secrets, indent=1) + "\n")
        say(f"plan kept in {path} (and {out / 'plan.json'}); run approach N with the same command and --approach N")
    return result


def run_main(args: argparse.Namespace) -> int:
    settings = load_settings()
    repo = Path(args.repo).resolve()
    markdown = task_markdown(args)
    out = Path(args.out) if args.out else settings.work_dir / "runs" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    model, model_name, sandbox = model_opener(args.model, settings), model_override(args.model), args.sandbox
    kind = sandbox or settings.sandbox
    if args.plan_only:
        planned = plan_only(
            markdown, repo, out, settings=settings, model=model, model_name=model_name, sandbox_kind=kind
        )
        return 0 if planned.proposal is not None else 1
    approach = None
    if args.approach is not None:
        kept = plan_path(settings.work_dir, repo, LocalRepoFiles(repo).commit, markdown)
        approach = load_approach(kept, args.approach)
    result = execute(
        markdown, repo, out, settings=settings, model=model, model_name=model_name, sandbox_kind=kind, approach=approach
    )
    return 0 if result.accepted else 1
