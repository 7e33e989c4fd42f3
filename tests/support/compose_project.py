"""A compose file as a podman-compose project: its commands (each printed as run), containers and PostgreSQL.

The project lives in a scratch directory: `compose.yaml` (a byte-for-byte copy of the file checked),
`local.yaml` (scripts/compose/local.yaml: the images built here) and the settings the file reads
beside it (`ai-fix.env`, `secrets/`), so a real deployment's `deploy/ai-fix.env` is never touched.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PODMAN_COMPOSE = str(Path(sys.executable).with_name("podman-compose"))


class CheckFailed(Exception):
    """A step of the compose check did not hold; the message says what was seen and what to look at."""


@dataclass
class Project:
    root: Path
    """The directory holding compose.yaml and local.yaml: compose resolves the file's relative paths from it."""
    name: str
    env: dict[str, str]
    """podman-compose's environment: the variables the file interpolates (AIFIX_DB_PASSWORD, …)."""
    log: Path
    """podman-compose's own output, every command's, shown when a step fails."""

    def command(self, *args: str) -> list[str]:
        """`podman-compose -p NAME -f compose.yaml -f local.yaml ARGS`, as run in the project's directory."""
        return ["podman-compose", "-p", self.name, "-f", "compose.yaml", "-f", "local.yaml", *args]

    def compose(self, *args: str) -> None:
        """Run podman-compose with `args` (the command printed first, its output into the log)."""
        command = self.command(*args)
        say(f"$ {shlex.join(command)}")
        with self.log.open("a") as out:
            out.write(f"\n$ {shlex.join(command)}\n")
            out.flush()
            done = subprocess.run(
                [PODMAN_COMPOSE, *command[1:]],
                cwd=self.root,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode != 0:
            raise CheckFailed(
                f"{shlex.join(command)} exited {done.returncode}; podman-compose's last lines:\n{self.log_tail()}"
            )

    def config(self) -> dict[str, Any]:
        """The merged configuration as podman-compose reads it (compose.yaml with local.yaml over it)."""
        done = subprocess.run(
            [PODMAN_COMPOSE, *self.command("config")[1:]],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise CheckFailed(f"podman-compose cannot read the compose file:\n{done.stdout}{done.stderr}")
        loaded = yaml.safe_load(done.stdout)
        if not isinstance(loaded, dict) or not isinstance(loaded.get("services"), dict):
            raise CheckFailed(f"podman-compose config gave no services:\n{done.stdout}{done.stderr}")
        return loaded

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text().splitlines()[-lines:])

    # -- containers -------------------------------------------------------------------------------

    def containers(self) -> list[dict[str, Any]]:
        """Every container of the project, running or not (podman's JSON: Names, State, Labels, …)."""
        out = podman("ps", "-a", "--filter", f"label=io.podman.compose.project={self.name}", "--format", "json")
        return list(json.loads(out or "[]"))

    def container(self, service: str) -> str:
        """The name podman-compose gives `service`'s (first) container."""
        return f"{self.name}_{service}_1"

    def running(self, name: str) -> bool:
        return podman("inspect", "--format", "{{.State.Running}}", name).strip() == "true"

    def logs(self, name: str, lines: int = 30) -> str:
        done = subprocess.run(
            ["podman", "logs", "--tail", str(lines), name], capture_output=True, text=True, check=False
        )
        return done.stdout + done.stderr

    # -- PostgreSQL -------------------------------------------------------------------------------

    def sql(self, query: str) -> list[list[str]]:
        """Rows of `query` run by psql inside the db container (over its socket: the check's view from outside)."""
        psql = ["psql", "-U", "aifix", "-d", "aifix", "-AtX", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", query]
        done = subprocess.run(
            ["podman", "exec", self.container("db"), *psql], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise CheckFailed(f"psql in the db container failed on {query!r}: {done.stderr.strip()}")
        return [line.split("\t") for line in done.stdout.splitlines() if line]

    def wait_sql(self, query: str, expected: list[list[str]], timeout: float, what: str) -> float:
        """Seconds until `query` gives `expected`; CheckFailed (with the last answer) after `timeout`."""
        began = time.monotonic()
        rows: list[list[str]] = []
        while time.monotonic() - began < timeout:
            rows = self.sql(query)
            if rows == expected:
                return time.monotonic() - began
            time.sleep(0.5)
        raise CheckFailed(f"{what}: not within {timeout:g} s; PostgreSQL answers {rows}, expected {expected}")


def podman(*args: str, timeout: float = 60) -> str:
    try:
        done = subprocess.run(["podman", *args], capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise CheckFailed(f"podman {shlex.join(args)} did not finish within {timeout:g} s") from exc
    if done.returncode != 0:
        raise CheckFailed(f"podman {shlex.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def say(line: str) -> None:
    """A line of the check's output (flushed: CI shows it as it happens)."""
    print(line, flush=True)


def wait_until(what: str, timeout: float, ready: Callable[[], bool]) -> float:
    """Seconds until `ready()`; CheckFailed saying `what` did not happen after `timeout`."""
    began = time.monotonic()
    while not ready():
        if time.monotonic() - began > timeout:
            raise CheckFailed(f"{what}: not within {timeout:g} s")
        time.sleep(0.25)
    return time.monotonic() - began
