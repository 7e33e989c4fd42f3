"""`ai-fix` command line: declares every command's arguments and hands off to that command's module."""

from __future__ import annotations

import argparse
import importlib
import sys

from bot.errors import AiFixError

# command -> "module:function"; imported only when that command runs, so start-up stays cheap.
HANDLERS = {
    "serve": "bot.commands.serve:serve_main",
    "worker": "bot.commands.worker:worker_main",
    "migrate": "bot.commands.migrate:migrate_main",
    "contract": "bot.commands.contract:contract_main",
    "init": "bot.commands.init:init_main",
    "run": "bot.commands.run:run_main",
    "demo": "bot.commands.demo:demo_main",
    "context": "bot.commands.context:context_main",
    "view": "bot.commands.view:view_main",
    "eval": "bot.commands.eval:eval_main",
    "doctor": "bot.commands.doctor:doctor_main",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ai-fix", description="Turn work requests into verified pull requests.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _service_commands(sub)
    _local_commands(sub)
    _eval_command(sub)
    return parser


def _service_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="the webhook server plus in-process workers")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--force", action="store_true", help="let the setup page replace an existing settings file (AIFIX_ENV_FILE)"
    )

    sub.add_parser("worker", help="workers only, sharing the queue in the same database")
    doctor = sub.add_parser("doctor", help="check the settings, the App, the database, the sandbox and the model")
    doctor.add_argument("--json", action="store_true", help="print the findings as one JSON object")
    sub.add_parser("migrate", help="apply the job store's schema migrations (AIFIX_DATABASE_URL) and exit")


def _local_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    contract = sub.add_parser("contract", help="print the task contract for an issue as JSON (dry run)")
    contract.add_argument("--repo", required=True, help="path to a local git repository")
    contract.add_argument("--issue", required=True, help="Markdown file: '# title' on the first line, body below")

    init = sub.add_parser("init", help="write .github/ai-fix.yml and an issue form into a repository")
    init.add_argument("path", nargs="?", default=".")

    run = sub.add_parser("run", help="run the whole loop on a local repository, without GitHub")
    run.add_argument("--repo", required=True)
    task = run.add_mutually_exclusive_group(required=True)
    task.add_argument("--issue", help="Markdown file: '# title' on the first line, body below")
    task.add_argument("--task", help="the task as plain text")
    run.add_argument("--model", default=None, help="model id, or replay:TRACE to replay a recorded trace")
    run.add_argument("--sandbox", default=None, choices=["auto", "podman", "docker", "bwrap", "none"])
    run.add_argument("--out", default=None, help="folder for pr.md, trace.jsonl and evidence.json")
    planning = run.add_mutually_exclusive_group()
    planning.add_argument(
        "--plan-only", action="store_true", help="print two approaches and their estimates, keep the plan, and stop"
    )
    planning.add_argument(
        "--approach", type=int, choices=[1, 2], help="run approach N of the plan --plan-only kept for this task"
    )

    sub.add_parser("demo", help="a replayed session on a sample repository: no account or API key needed")

    context = sub.add_parser("context", help="show what retrieval would put in the model's context")
    context.add_argument("--repo", required=True)
    context.add_argument("--issue", required=True)
    context.add_argument("--budget", type=int, default=8000, help="token budget for the rendered context")
    context.add_argument("--top", type=int, default=10, help="how many ranked files to list")

    view = sub.add_parser("view", help="serve the run viewer's page for a local run's trace")
    view.add_argument("trace", help="the trace.jsonl of a run (ai-fix run --out DIR writes DIR/trace.jsonl)")
    view.add_argument("--port", type=int, default=8765, help="port on this machine (0: any free port)")
    view.add_argument("--host", default="127.0.0.1", help="address to listen on (the page has no login: keep it local)")


def _eval_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser("eval", help="run tasks with hidden tests and classify what ai-fix delivered, per model")
    ev.add_argument("tasks", nargs="?", help="TASKS.jsonl (SWE-bench rows, or pypi release pairs) or a shipped set")
    ev.add_argument(
        "--model", action="append", help="a model spec as for ai-fix run, or oracle / noop; repeat to compare"
    )
    ev.add_argument("--config", action="append", help="a YAML file of loop settings (budget, loop); repeat to compare")
    ev.add_argument("--out", default=None, help="folder for report.json, report.md, the chart and each run's files")
    ev.add_argument("--jobs", type=int, default=1, help="runs at once, each in its own sandbox")
    ev.add_argument("--repos", default=None, help="folder of owner__name.git mirrors (or owner__name clones)")
    ev.add_argument("--sandbox", default=None, choices=["auto", "podman", "docker", "bwrap"])
    ev.add_argument("--resume", action="store_true", help="continue the eval in --out, skipping finished runs")
    ev.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    ev.add_argument("--list-sets", action="store_true", help="name the task sets shipped with ai-fix")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    module, _, func = HANDLERS[args.command].partition(":")
    handler = getattr(importlib.import_module(module), func)
    try:
        return int(handler(args) or 0)
    except AiFixError as exc:
        print(f"ai-fix {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
