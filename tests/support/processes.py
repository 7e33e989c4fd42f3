"""ai-fix as real processes in tests: the installed command, its environment, a free loopback port."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from tests.support.fake_github import FakeGitHub
from tests.support.service import ADMIN
from tests.support.webhooks import SECRET

ROOT = Path(__file__).resolve().parents[2]
AI_FIX = str(Path(sys.executable).parent / "ai-fix")


def env_for(
    tmp_path: Path, fake: FakeGitHub, github_url: str, pipeline: str, database_url: str | None = None
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIFIX_")}
    return {
        **env,
        "PYTHONPATH": str(ROOT),
        "AIFIX_APP_ID": str(fake.app_id),
        "AIFIX_PRIVATE_KEY": fake.private_key_pem,
        "AIFIX_WEBHOOK_SECRET": SECRET,
        "AIFIX_DATABASE_URL": database_url or f"sqlite:///{tmp_path / 'ai-fix.db'}",
        "AIFIX_GITHUB_API_URL": github_url,
        "AIFIX_PIPELINE": pipeline,
        "AIFIX_WORK_DIR": str(tmp_path / "work"),
        "AIFIX_WORKERS": "1",
        "AIFIX_ADMIN_TOKEN": ADMIN,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
