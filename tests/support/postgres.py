"""A real PostgreSQL server for the test session: initdb and pg_ctl in a temporary directory, on a loopback port.

Everything here runs as root and `initdb` refuses root, so the server runs as the `postgres` user
Debian's package creates (or `nobody`). `database_url` gives each test its own database, on SQLite
and on that server in turn.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from bot.queue.store import Store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One cluster; `new_database()` makes an empty database on it and returns its URL."""

    def __init__(self, *, durable: bool = False) -> None:
        """`durable`: fsync as a production server would (benchmarks); tests run without it."""
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            pytest.fail("PostgreSQL is not installed: run ./scripts/setup.sh (it installs Debian's postgresql)")
        self.bin = Path(found[-1]).parent
        user = next((u for u in ("postgres", "nobody") if _has_user(u)), None)
        assert user is not None, "no unprivileged user (postgres or nobody) to run the server as"
        self.user = pwd.getpwnam(user)
        self.root = Path(tempfile.mkdtemp(prefix="ai-fix-pg-"))  # not under pytest's root-only tmp folders
        os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        self.data = self.root / "data"
        self.port = free_port()
        self._counter = itertools.count(1)
        self._run("initdb", "-D", str(self.data), "-U", "aifix", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c max_connections=300"
        if not durable:
            options += " -c fsync=off -c full_page_writes=off -c shared_buffers=32MB"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-o", options, "-w", "-t", "60", "start"
        )
        self.admin_url = f"postgresql://aifix@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.bin / tool), *args],
            user=self.user.pw_uid,
            group=self.user.pw_gid,
            extra_groups=[],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{tool} failed: {done.stdout}{done.stderr}"

    def new_database(self) -> str:
        name = f"t{next(self._counter)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return f"postgresql://aifix@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty job store: a SQLite file, then a database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ai-fix.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.new_database()


class Clock:
    """A store's clock that tests move by setting `now`."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(database_url: str, clock: Clock) -> Iterator[Store]:
    """A migrated store on `database_url` (SQLite, then PostgreSQL), on the `clock` fixture's time."""
    store = Store.from_url(database_url, clock=clock)
    store.init_schema()
    yield store
    store.close()
