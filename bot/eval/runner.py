"""Running an eval: every (task, variant) in a fresh clone, `--jobs` at a time, each recorded as soon as it ends.

A run's folder `DIR/tasks/<instance_id>/<variant>/` holds what `ai-fix run` writes (trace.jsonl,
evidence.json, pr.md), its log (run.log), the hidden tests' log (hidden.log) and, last, result.json:
a run with a result.json is finished, and `--resume` runs only the others (a half-done one again from
the start). Nothing but the run itself is passed in: how a run is executed is the caller's.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bot.contract.models import TaskContract
from bot.errors import ConfigError
from bot.eval.classify import classify
from bot.eval.hidden import HiddenRun, OpenSandbox, hidden_lines, judge_hidden, run_hidden
from bot.eval.models import TaskRecord, Tokens
from bot.eval.progress import Progress
from bot.eval.repos import Source, clone_for_run, prepare
from bot.eval.tasks import EvalTask
from bot.eval.variants import Variant
from bot.loop.result import RunResult

RESULT = "result.json"


@dataclass(frozen=True)
class RunRequest:
    """One run for the caller to execute the way `ai-fix run` does."""

    task: EvalTask
    variant: Variant
    source: Source
    repo: Path
    """A fresh clone of the task's repository at its base commit, on `main`."""
    out: Path
    """Where trace.jsonl, evidence.json and pr.md go."""
    log: TextIO


@dataclass(frozen=True)
class EvalKit:
    run: Callable[[RunRequest], RunResult]
    open_sandbox: OpenSandbox
    """A started sandbox over a tree, for the hidden tests (the same backend and limits as the runs)."""
    fetch: Callable[[str, str, str], Path]
    """A source release (name, version, sha256) as a local file, for tasks built from PyPI."""
    repos: Path | None
    scratch: Path
    """Host folder for the hidden tests' work trees."""


def check_rounds(trace: Path) -> int:
    """How often the harness ran the checks on a change in a run (its run_checks and finish actions with checks)."""
    if not trace.is_file():
        return 0
    rounds = 0
    for line in trace.read_text().splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("kind") == "step":
            rounds += sum(1 for a in record.get("actions", []) if a.get("checks"))
    return rounds


def write_atomically(path: Path, text: str) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    part.replace(path)


class Eval:
    def __init__(
        self, out: Path, tasks: Sequence[EvalTask], variants: Sequence[Variant], kit: EvalKit, *, resume: bool
    ) -> None:
        self.out, self.tasks, self.variants, self.kit = out, list(tasks), list(variants), kit
        self.done = self._finished()
        if self.done and not resume:
            raise ConfigError(
                f"{out} already holds {len(self.done)} finished runs: pass --resume to continue that eval, "
                "or choose another --out"
            )
        self._sources: dict[str, Source] = {}
        self._on_base: dict[str, HiddenRun] = {}
        self._locks = {t.instance_id: threading.Lock() for t in self.tasks}

    def folder(self, task: EvalTask, variant: Variant) -> Path:
        return self.out / "tasks" / task.instance_id / variant.slug

    def _finished(self) -> dict[tuple[str, str], TaskRecord]:
        found = {}
        for task in self.tasks:
            for variant in self.variants:
                path = self.folder(task, variant) / RESULT
                if path.is_file():
                    found[(task.instance_id, variant.label)] = TaskRecord.model_validate_json(path.read_text())
        return found

    def pending(self) -> list[tuple[EvalTask, Variant]]:
        return [(t, v) for t in self.tasks for v in self.variants if (t.instance_id, v.label) not in self.done]

    def records(self) -> list[TaskRecord]:
        """Every finished run, in task order, then variant order."""
        return [
            self.done[(t.instance_id, v.label)]
            for t in self.tasks
            for v in self.variants
            if (t.instance_id, v.label) in self.done
        ]

    def run(self, jobs: int, progress: Progress) -> list[TaskRecord]:
        progress.start()
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="eval") as pool:
            futures = [pool.submit(self.run_one, t, v) for t, v in self.pending()]
            try:
                for future in as_completed(futures):
                    record = future.result()
                    self.done[(record.instance_id, record.variant)] = record
                    progress.finished(record)
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            finally:
                progress.close()
        return self.records()

    def source(self, task: EvalTask) -> Source:
        with self._locks[task.instance_id]:
            if task.instance_id not in self._sources:
                self._sources[task.instance_id] = prepare(
                    task, repos=self.kit.repos, work=self.out / "repos", fetch=self.kit.fetch
                )
            return self._sources[task.instance_id]

    def hidden_on_base(
        self, task: EvalTask, clone: Path, start: str, source: Source, contract: TaskContract
    ) -> HiddenRun:
        """The hidden tests on the task's base commit, run once per task (every variant shares the base)."""
        with self._locks[task.instance_id]:
            if task.instance_id not in self._on_base:
                self._on_base[task.instance_id] = run_hidden(
                    task,
                    repo=clone,
                    head=start,
                    base=start,
                    test_patch=source.test_patch,
                    contract=contract,
                    open_sandbox=self.kit.open_sandbox,
                    work=self.kit.scratch,
                )
            return self._on_base[task.instance_id]

    def run_one(self, task: EvalTask, variant: Variant) -> TaskRecord:
        folder = self.folder(task, variant)
        if folder.exists():
            shutil.rmtree(folder)  # a run cut short by an interruption starts again from the beginning
        folder.mkdir(parents=True)
        base = TaskRecord(
            instance_id=task.instance_id,
            variant=variant.label,
            model=variant.model,
            config=variant.config.name,
            klass="error",
        )
        with (folder / "run.log").open("a") as log:
            try:
                record = self._run(task, variant, folder, log, base)
            except Exception as exc:  # noqa: BLE001 - one run's failure is recorded, the eval goes on
                traceback.print_exc(file=log)
                record = base.model_copy(update={"error": f"{type(exc).__name__}: {exc}"})
        write_atomically(folder / RESULT, record.model_dump_json(by_alias=True, indent=1) + "\n")
        return record

    def _run(self, task: EvalTask, variant: Variant, folder: Path, log: TextIO, base: TaskRecord) -> TaskRecord:
        source = self.source(task)
        clone = self.out / "repos" / task.instance_id / variant.slug
        start = clone_for_run(source, clone, task, variant.config.budget)
        began = time.monotonic()
        result = self.kit.run(RunRequest(task, variant, source, clone, folder, log))
        wall = time.monotonic() - began
        on_base = self.hidden_on_base(task, clone, start, source, result.contract)
        after = run_hidden(
            task,
            repo=clone,
            head=result.head_sha or start,
            base=start,
            test_patch=source.test_patch,
            contract=result.contract,
            open_sandbox=self.kit.open_sandbox,
            work=self.kit.scratch,
        )
        hidden = judge_hidden(task, after, on_base)
        (folder / "hidden.log").write_text("\n".join([after.log, *hidden_lines(hidden), "", on_base.log]))
        c = result.cost
        return base.model_copy(
            update={
                "klass": classify(result.outcome, hidden),
                "outcome": result.outcome,
                "reason": result.reason,
                "hidden": hidden,
                "steps": result.steps,
                "rounds": check_rounds(folder / "trace.jsonl"),
                "rolled_back": bool(result.handoff.ruled_out),
                "tokens": Tokens(
                    input=c.input_tokens,
                    output=c.output_tokens,
                    cache_read=c.cache_read_tokens,
                    cache_write=c.cache_write_tokens,
                ),
                "usd": c.usd,
                "wall_s": round(wall, 3),
                "branch": result.branch,
                "repo": str(clone),
            }
        )


def write_manifest(out: Path, document: dict[str, object]) -> None:
    """`DIR/eval.json`: what this eval runs, written before the first run."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "eval.json", json.dumps(document, indent=1) + "\n")
