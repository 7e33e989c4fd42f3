"""`ai-fix view TRACE.jsonl`: the run viewer's page for a local run, served on this machine (live while the run goes on)."""

from __future__ import annotations

import argparse
import signal
import socket
from pathlib import Path

import uvicorn

from bot.commands.serve import exit_cleanly
from bot.errors import ConfigError
from bot.secrets import held_secrets
from bot.settings import load_settings
from bot.viewer.routes import local_app


def view_main(args: argparse.Namespace) -> int:
    settings = load_settings()
    path = Path(args.trace).resolve()
    if path.is_dir() or not path.parent.is_dir():
        raise ConfigError(
            f"{args.trace}: no such trace; pass the trace.jsonl of a run (`ai-fix run` prints the command)"
        )
    app = local_app(path, held_secrets(settings))
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port} ({exc.strerror}); pass another --port") from exc
    port = sock.getsockname()[1]
    waiting = "" if path.is_file() else " (not written yet: the page fills in when the run starts)"
    print(f"ai-fix view: {path}{waiting}\nopen http://{args.host}:{port}/ (Ctrl-C stops)", flush=True)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, exit_cleanly)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=1))
    server.run(sockets=[sock])
    return 0
