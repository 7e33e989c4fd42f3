"""`ai-fix eval`: tasks with hidden tests, each run through `ai-fix run`'s own code path, then classified and reported."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bot.commands.run import execute, markdown_of
from bot.commands.toolkit import model_opener, model_override, toolkit
from bot.errors import ConfigError
from bot.eval.classify import summarize
from bot.eval.policies import POLICIES, Noop, Oracle
from bot.eval.progress import Progress
from bot.eval.pypi import SdistCache
from bot.eval.report import comparisons, summary_tables, write_report
from bot.eval.repos import files_after
from bot.eval.runner import Eval, EvalKit, RunRequest, write_manifest
from bot.eval.tasks import check_patches, load_tasks, shipped_sets
from bot.eval.variants import load_config, variants
from bot.loop.result import RunResult
from bot.loop.session import ModelOpener
from bot.model.routing import ModelChoice, small_for
from bot.settings import Settings, load_settings


def list_sets() -> int:
    for name, what in shipped_sets().items():
        _, tasks = load_tasks(name)
        print(f"{name}: {len(tasks)} tasks. {what}")
    return 0


def check_models(models: list[str], settings: Settings) -> None:
    """Open each model once before any run, so a missing key or a bad spec stops the eval at once (exit 2)."""
    for spec in models:
        if spec in POLICIES:
            continue
        opener = model_opener(spec, settings)
        name = model_override(spec) or settings.model
        opener(ModelChoice(name=name, small=small_for(name, settings.small_model), reason="check")).close()


def opener_for(request: RunRequest, settings: Settings) -> tuple[ModelOpener, str | None]:
    """The model of one run and the name it runs under: a calibration policy, or what `ai-fix run --model` takes."""
    spec = request.variant.model
    if spec == "noop":
        noop = Noop()
        return lambda _choice: noop, "noop"
    if spec == "oracle":
        source = request.source
        if not source.patch.strip():
            raise ConfigError(f"task {request.task.instance_id} has no `patch` (its gold fix): oracle cannot run it")
        oracle = Oracle(
            files_after(source.repo, source.base_sha, [source.patch, source.test_patch]), request.task.fail_to_pass
        )
        return lambda _choice: oracle, "oracle"
    return model_opener(spec, settings), model_override(spec)


def checked_args(args: argparse.Namespace) -> None:
    """ConfigError, before anything runs, for what the command line lacks or gets wrong."""
    if not args.tasks:
        raise ConfigError(f"name a TASKS.jsonl file or a shipped set ({', '.join(shipped_sets())}; see --list-sets)")
    if not args.model:
        raise ConfigError("--model: name at least one model (any `ai-fix run --model` spec), or oracle / noop")
    if args.jobs < 1 or (args.limit is not None and args.limit < 1):
        raise ConfigError("--jobs and --limit take a number of at least 1")


def eval_kit(args: argparse.Namespace, settings: Settings, kind: str, sdists: SdistCache) -> EvalKit:
    """How each run of the eval is executed: `ai-fix run`'s code path, the same sandbox for the hidden tests."""

    def run(request: RunRequest) -> RunResult:
        opener, model_name = opener_for(request, settings)
        return execute(
            markdown_of(request.task.problem_statement),
            request.repo,
            request.out,
            settings=settings,
            model=opener,
            model_name=model_name,
            sandbox_kind=kind,
            stream=request.log,
            loop_settings=request.variant.config.loop,
        )

    return EvalKit(
        run=run,
        open_sandbox=toolkit(settings, model=model_opener(None, settings), sandbox=kind).open_sandbox,
        fetch=sdists.fetch,
        repos=Path(args.repos) if args.repos else None,
        scratch=settings.work_dir / "eval",
    )


def eval_main(args: argparse.Namespace) -> int:
    if args.list_sets:
        return list_sets()
    checked_args(args)
    settings = load_settings()
    name, tasks = load_tasks(args.tasks)
    tasks = tasks[: args.limit] if args.limit else tasks
    check_patches(tasks)
    compared = variants(list(args.model), [load_config(Path(c)) for c in args.config or []])
    check_models(list(args.model), settings)
    kind = args.sandbox or settings.sandbox
    out = (
        Path(args.out).resolve()
        if args.out
        else settings.work_dir / "evals" / f"{time.strftime('%Y%m%d-%H%M%S')}-{name}"
    )
    sdists = SdistCache(settings.eval_cache.expanduser(), settings.eval_index_url)
    evaluation = Eval(out, tasks, compared, eval_kit(args, settings, kind, sdists), resume=args.resume)
    meta: dict[str, object] = {
        "tasks_source": args.tasks,
        "sandbox": kind,
        "variants": [{"variant": v.label, "model": v.model, "config": v.config.name} for v in compared],
        "configs": {v.config.name: {"budget": v.config.budget, "loop": v.config.loop} for v in compared},
    }
    write_manifest(out, meta)
    total, left = len(tasks) * len(compared), len(evaluation.pending())
    print(
        f"ai-fix eval {name}: {len(tasks)} tasks × {len(compared)} variants = {total} runs"
        f"{f' ({total - left} already done)' if left < total else ''}; --jobs {args.jobs}, sandbox {kind}; in {out}",
        flush=True,
    )
    with sdists:  # only the runs connect to the index
        records = evaluation.run(args.jobs, Progress(total, sys.stderr, done=total - left))
    summaries = [summarize(v.label, [r for r in records if r.variant == v.label]) for v in compared]
    tables = comparisons([(v.label, v.model, v.config.name) for v in compared])
    write_report(out, name=name, meta=meta, summaries=summaries, records=records, tables=tables)
    print("\n".join(summary_tables(summaries, tables)))
    print(f"\nreport: {out / 'report.md'} (and report.json, classes.png; each run in {out / 'tasks'})")
    errors = [r for r in records if r.klass == "error"]
    for r in errors:
        print(f"not run: {r.instance_id} {r.variant}: {r.error}", file=sys.stderr)
    return 1 if errors else 0
