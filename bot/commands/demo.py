"""`ai-fix demo`: a recorded session replayed on a sample repository; no account, no API key, no model call."""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from bot.commands.run import execute
from bot.model.replay import ReplayModel, recorded_responses
from bot.settings import load_settings

BANNER = """\
==============================================================================
 ai-fix demo: a REPLAY of a recorded session (no model is called, no API key).
 The contract, the sandbox, the checks and the patch gate are real and run now;
 only the model's answers come from bot/commands/demo_data/session.jsonl.
=============================================================================="""


def demo_data(name: str) -> str:
    return resources.files("bot.commands.demo_data").joinpath(name).read_text()


def make_repo(dest: Path, files: dict[str, str]) -> Path:
    """A git repository at `dest` with `files` committed on `main`."""
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    ident = ["-c", "user.name=ai-fix demo", "-c", "user.email=demo@localhost", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], [*ident, "commit", "-q", "-m", "initial commit"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True)
    return dest


def sample() -> tuple[dict[str, str], str]:
    """The sample repository's files and the issue the demo works on."""
    data = json.loads(demo_data("sample_repo.json"))
    return data["files"], data["issue"]


def demo_main(args: argparse.Namespace) -> int:
    print(BANNER, flush=True)
    files, issue = sample()
    model = ReplayModel(recorded_responses(demo_data("session.jsonl").splitlines()), source="the recorded demo session")
    with tempfile.TemporaryDirectory(prefix="ai-fix-demo-") as tmp:
        root = Path(tmp)
        repo = make_repo(root / "calc", files)
        settings = load_settings(work_dir=root / "work")
        print(f"sample repository: {repo}\n\n--- the issue ---\n{issue}", flush=True)
        result = execute(
            issue,
            repo,
            root / "out",
            settings=settings,
            model=lambda _choice: model,
            model_name=None,
            sandbox_kind=settings.sandbox,
            label="replay",
            viewable=False,
        )
        print(f"\n--- the change (branch {result.branch}) ---\n{result.diff_text}")
        print("--- the PR body ai-fix would post (pr.md) ---")
        print((root / "out" / "pr.md").read_text())
        print(
            "(replayed: run `ai-fix run --repo PATH --issue FILE.md` with a model key set, e.g. AIFIX_ANTHROPIC_API_KEY, for a live session; docs/settings.md: Model providers)"
        )
    return 0 if result.accepted else 1
