"""Benchmark of the execution loop on the recorded demo session (bot/commands/demo_data/session.jsonl).

Prints, from one run of N repetitions:
- orchestration time per step: the step's wall time minus model latency and check time (goal < 50 ms);
- the share of input tokens served from the prompt cache after step 1 (goal >= 80 %).

The recorded answers are played by the scripted backend, whose usage follows the Messages API's
caching rule (an identical prefix up to the breakpoint, >= 1024 tokens, is read from the cache), so
the cache figure measures the requests this loop builds today, not numbers stored in the recording.
Usage: .venv/bin/python bench/loop.py [--runs N] [--sandbox bwrap]   (--smoke: one run, as CI runs it)
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from common import add_smoke, machine_load

from bot.commands.demo import demo_data, make_repo, sample
from bot.commands.toolkit import toolkit
from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.files import LocalRepoFiles
from bot.loop.report import Silent
from bot.loop.session import RunInput, run_session
from bot.model.base import Usage
from bot.model.replay import recorded_responses
from bot.model.scripted import ScriptedModel, Turn
from bot.settings import load_settings
from bot.workspace import opening
from bot.workspace.branch import branch_name


def recorded_script() -> list[Turn]:
    return [
        Turn(text=r.text, calls=[(c.name, c.input) for c in r.tool_calls])
        for r in recorded_responses(demo_data("session.jsonl").splitlines())
    ]


def one_run(root: Path, sandbox_kind: str) -> list[dict]:
    files, issue = sample()
    repo = make_repo(root / "repo", files)
    local = LocalRepoFiles(repo)
    contract = build_contract(snapshot_from_markdown(issue, str(repo)), local)
    workspace = opening.local(repo, root / "jobs", branch=branch_name(None, contract.title), ref=local.commit)
    model = ScriptedModel(recorded_script())
    kit = toolkit(load_settings(work_dir=root / "work"), model=lambda _choice: model, sandbox=sandbox_kind)
    try:
        run = RunInput(
            contract, workspace, repo=str(repo), secrets=[], trace_path=root / "trace.jsonl", reporter=Silent()
        )
        result = run_session(run, kit)
    finally:
        workspace.remove()
    if result.outcome != "accepted":
        raise SystemExit(f"the recorded session did not replay to acceptance: {result.reason}")
    return [r for r in map(json.loads, (root / "trace.jsonl").read_text().splitlines()) if r["kind"] == "step"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sandbox", default="bwrap")
    add_smoke(parser, "one run")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
    print(machine_load())
    orchestration_ms: list[float] = []
    changing_ms: list[float] = []
    """Steps that edited, ran checks or finished (git stats, checkpoint, index refresh)."""
    cached = prompt = 0
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ai-fix-bench-") as tmp:
            steps = one_run(Path(tmp), args.sandbox)
        for step in steps:
            ms = (step["duration_s"] - step["model_s"] - step["checks_s"]) * 1000
            orchestration_ms.append(ms)
            if any(
                a["tool"] in ("str_replace_based_edit_tool", "run_checks", "finish")
                and a["input"].get("command") != "view"
                for a in step["actions"]
            ):
                changing_ms.append(ms)
            if step["step"] > 1:
                usage = Usage.model_validate(step["usage"])
                cached += usage.cache_read_tokens
                prompt += usage.prompt_tokens
    share = cached / prompt if prompt else 0.0
    print(f"session: {len(steps)} steps (recorded demo session), {args.runs} runs, sandbox {args.sandbox}")
    print(
        f"orchestration per step: median {statistics.median(orchestration_ms):.1f} ms, max {max(orchestration_ms):.1f} ms (goal < 50 ms)"
    )
    print(f"  of which steps that change the workspace: median {statistics.median(changing_ms):.1f} ms")
    print(f"input tokens from the prompt cache after step 1: {share:.1%} ({cached}/{prompt}) (goal >= 80 %)")
    print(f"at the end: {machine_load()}")


if __name__ == "__main__":
    main()
