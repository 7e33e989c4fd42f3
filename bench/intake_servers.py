"""The servers bench/webhook_ack.py loads: `ai-fix serve` with a GitHub stub, a baseline, a Probot app; their CPU and GC counts."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-webhook-secret-0123"  # `ai-fix serve` refuses a secret under 16 characters
ADMIN = "bench-admin-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


BASELINE = """
import sys, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""
"""The same server stack answering 202 and storing nothing: what this machine allows right now."""


def wait_for_port(proc: subprocess.Popen[bytes], port: int) -> subprocess.Popen[bytes]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the server did not start within 60 s")


class _GitHubApp(BaseHTTPRequestHandler):
    """GET /app, the call `ai-fix serve` makes at start (to learn its bot user); nothing else is answered."""

    def do_GET(self) -> None:
        body = json.dumps({"id": 1, "slug": "ai-fix"}).encode() if self.path == "/app" else b"{}"
        self.send_response(200 if self.path == "/app" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def github_stub() -> str:
    """The base URL of a GitHub stub answering GET /app, served by a daemon thread of this process."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _GitHubApp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def start_server(
    database_url: str, port: int, github_url: str, *, env: dict[str, str] | None = None, source: Path | None = None
) -> subprocess.Popen[bytes]:
    """`ai-fix serve` on `port`, intake only; `env`: more settings; `source`: the `bot` package of another source
    tree (`git archive main | tar -x -C DIR`) instead of this one's, to compare."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    settings = {
        **os.environ,
        "AIFIX_APP_ID": "1",
        "AIFIX_PRIVATE_KEY": pem,
        "AIFIX_WEBHOOK_SECRET": SECRET,
        "AIFIX_DATABASE_URL": database_url,
        "AIFIX_WORKERS": "0",
        "AIFIX_ADMIN_TOKEN": ADMIN,
        "AIFIX_GITHUB_API_URL": github_url,
        "AIFIX_ANTHROPIC_API_KEY": "not-used-by-the-intake",  # `serve` checks the model's key at start
        **(env or {}),
    }
    command = [str(Path(sys.executable).parent / "ai-fix")]
    if source is not None:
        settings["PYTHONPATH"] = str(source)  # ahead of this tree's editable install (run from there: not the cwd's)
        command = [sys.executable, "-m", "bot.commands.main"]
    proc = subprocess.Popen(
        [*command, "serve", "--port", str(port)], env=settings, cwd=source, stderr=subprocess.DEVNULL
    )
    return wait_for_port(proc, port)


def collections(port: int) -> list[int]:
    """The server's garbage collections so far, by generation (2: full), from its /metrics."""
    conn = HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {ADMIN}"})
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    found = dict(re.findall(r'^aifix_gc_collections_total\{generation="(\d)"\} (\d+)$', text, re.MULTILINE))
    return [int(found.get(str(generation), 0)) for generation in range(3)]


def server_cpu(pid: int) -> float:
    """User + system CPU seconds of the server process (Linux /proc; 0 elsewhere)."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return 0.0
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def servers_cpu(servers: list[subprocess.Popen[bytes]]) -> float:
    return sum(server_cpu(server.pid) for server in servers)


def postgres_cpu(data: Path) -> float:
    """User + system CPU seconds of a PostgreSQL server and its backends (the postmaster's children), so far."""
    try:
        postmaster = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    total = server_cpu(postmaster)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the backend ended meanwhile
            continue
        if int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


PROBOT = ROOT / "bench" / "probot"
"""The Probot 14 app (`app.js`, handling issues.labeled and storing nothing) and its locked dependencies."""


def install_probot() -> Path:
    """The Probot app with its locked dependencies installed (`npm ci`, once) in .cache/probot-bench."""
    target = ROOT / ".cache" / "probot-bench"
    lock = (PROBOT / "package-lock.json").read_bytes()
    if (
        not (target / "node_modules" / ".bin" / "probot").exists()
        or (target / "package-lock.json").read_bytes() != lock
    ):
        target.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json", "app.js"):
            shutil.copyfile(PROBOT / name, target / name)
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=target,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    shutil.copyfile(PROBOT / "app.js", target / "app.js")
    return target


def start_probot(app: Path, port: int) -> subprocess.Popen[bytes]:
    """`probot run app.js` on `port`, POST /webhook, set up as Probot's documentation advises for production:
    `NODE_ENV=production` (docs/logging.md: "as it should be in production"), structured JSON logs
    (`LOG_FORMAT=json`, docs/configuration.md) and only warnings logged, so no log line per request."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    env = {
        **os.environ,
        "APP_ID": "1",
        "PRIVATE_KEY": pem,
        "WEBHOOK_SECRET": SECRET,
        "WEBHOOK_PATH": "/webhook",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "NODE_ENV": "production",
        "LOG_FORMAT": "json",
        "LOG_LEVEL": "warn",
    }
    proc = subprocess.Popen(
        [str(app / "node_modules" / ".bin" / "probot"), "run", "./app.js"], cwd=app, env=env, stdout=subprocess.DEVNULL
    )
    return wait_for_port(proc, port)
