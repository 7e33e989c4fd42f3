"""The compose check (scripts/check-compose.sh): deploy/compose.yaml started with podman-compose and checked from outside.

Real: the compose file (a byte-for-byte copy, with scripts/compose/local.yaml over it naming the images
built here), podman-compose, the ai-fix image, PostgreSQL 15 (Debian's, in an image standing in for
docker.io/library/postgres:15, which no registry here serves), `migrate`, the intakes (the file's `serve`,
and a second container of it started by `podman-compose run`), the workers and their leases.
Faked: GitHub only, at the HTTP level (tests.support.fake_pulls served on the host, reached from the
containers at host.containers.internal; every request checked against GitHub's OpenAPI). The jobs are
labelled issues without acceptance criteria: the workers' real pipeline reads the repository through
the contents API, asks for the criteria on the issue and ends them `needs_clarification`, so no job
needs the model or the sandbox (neither is exercised here).

The file's services are checked before anything is built; then the images are built, the services
started, and the steps of tests.support.compose_steps run, each printing what it measured.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.compose_project import CheckFailed, Project, say
from tests.support.compose_steps import Check, Layout
from tests.support.compose_world import Intakes, fake_github
from tests.support.fake_pulls import PullsGitHub

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "scripts" / "compose"
BASE = "localhost/ai-fix-base:bookworm"
POSTGRES = "localhost/ai-fix-postgres:15"
IMAGE = "localhost/ai-fix:latest"
"""What the file's `image: ai-fix` names once built."""
PROJECT = "ai-fix-check"
INTAKE_PORT = 8000
"""Where the file publishes `serve`."""


# -- the file ---------------------------------------------------------------------------------------


def layout(config: dict[str, Any]) -> Layout:
    """The services the check drives and their order, from the merged configuration; CheckFailed names what
    is missing or wrong.

    podman-compose accepts a `depends_on` naming a service that does not exist (docker compose refuses
    it), so that is checked here: such a file would start its services in no reliable order."""
    services: dict[str, Any] = config["services"]
    depends: dict[str, dict[str, str]] = {}
    for name, service in services.items():
        wanted = service.get("depends_on") or {}
        if isinstance(wanted, list):
            wanted = dict.fromkeys(wanted)
        depends[name] = {dep: (wanted[dep] or {}).get("condition", "service_started") for dep in wanted}
        for dependency in depends[name]:
            if dependency not in services:
                raise CheckFailed(
                    f"service {name} depends on {dependency!r}, which the compose file does not define "
                    f"(it defines {', '.join(sorted(services))})"
                )
    commands = {name: (s.get("command") or [])[:2] for name, s in services.items()}
    for name, command in (("migrate", ["ai-fix", "migrate"]), ("serve", ["ai-fix", "serve"])):
        if commands.get(name) != command:
            raise CheckFailed(f"the compose file has no service {name} running `{' '.join(command)}`")
    if "db" not in services:
        raise CheckFailed("the compose file has no service db (AIFIX_DATABASE_URL names the host db)")
    workers = sorted(name for name, command in commands.items() if command == ["ai-fix", "worker"])
    if len(workers) < 2:
        raise CheckFailed(f"the compose file runs `ai-fix worker` in {workers or 'no service'}; the check needs two")
    return Layout(depends, workers)


def settings_file(example: Path, values: dict[str, str]) -> str:
    """`example` (deploy/ai-fix.env.example) with each variable it names set from `values`, the others of
    `values` appended; CheckFailed on a variable the check does not know how to set."""
    lines = []
    for line in example.read_text().splitlines():
        if line and not line.startswith("#"):
            key = line.split("=", 1)[0]
            if key not in values:
                raise CheckFailed(f"{example} names {key}, which the compose check does not set: add it to the check")
            line = f"{key}={values[key]}"
        lines.append(line)
    named = {line.split("=", 1)[0] for line in lines if line and not line.startswith("#")}
    return "\n".join([*lines, *(f"{k}={v}" for k, v in values.items() if k not in named)]) + "\n"


def prepare(tmp: Path, compose_file: Path) -> Project:
    """The project's directory: the file as it is, the override naming the local images, a database password."""
    root = tmp / "deploy"
    (root / "secrets").mkdir(parents=True)
    shutil.copyfile(compose_file, root / "compose.yaml")
    shutil.copyfile(LOCAL / "local.yaml", root / "local.yaml")
    # BUILDAH_FORMAT=docker, as scripts/build-image.sh builds: OCI images carry no HEALTHCHECK, and its layers are reused.
    env = {
        **os.environ,
        "AIFIX_DB_PASSWORD": secrets.token_hex(16),
        "AIFIX_CHECK_SOURCE": str(ROOT),
        "BUILDAH_FORMAT": "docker",
    }
    return Project(root, PROJECT, env, tmp / "podman-compose.log")


def write_settings(project: Project, github: PullsGitHub, port: int, secret: str, admin: str) -> None:
    """deploy/ai-fix.env.example filled in for the fake GitHub, and the App's key where the example says it is."""
    key = project.root / "secrets" / "ai-fix.pem"
    key.write_text(github.private_key_pem)
    os.chown(key, 10001, -1)  # as docs/compose.md says: the image's user (aifix, uid 10001) alone reads it
    key.chmod(0o600)
    values = {
        "AIFIX_APP_ID": str(github.app_id),
        "AIFIX_PRIVATE_KEY_PATH": "/secrets/ai-fix.pem",
        "AIFIX_WEBHOOK_SECRET": secret,
        "AIFIX_ANTHROPIC_API_KEY": "not-used-no-job-reaches-the-model",
        "AIFIX_ADMIN_TOKEN": admin,
        "AIFIX_GITHUB_API_URL": f"http://host.containers.internal:{port}/",
    }
    (project.root / "ai-fix.env").write_text(settings_file(ROOT / "deploy" / "ai-fix.env.example", values))


# -- the images -------------------------------------------------------------------------------------


def image_id(image: str) -> str:
    done = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", image], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def replaced(image: str, build: Callable[[], object]) -> None:
    """Build `image`, removing the one the tag named before if the build made a new one (no pile of old images)."""
    previous = image_id(image)
    build()
    if previous and previous != image_id(image):
        subprocess.run(["podman", "rmi", previous], capture_output=True, check=False)


def build(project: Project) -> None:
    """PostgreSQL's image, then the file's own build (`migrate`'s, tagged ai-fix), both on the local base."""
    began = time.monotonic()
    if not image_id(BASE):
        say(f"no {BASE} yet: ./scripts/build-image.sh makes it from Debian's packages (and checks the image)")
        if subprocess.run([str(ROOT / "scripts" / "build-image.sh")], check=False).returncode != 0:
            raise CheckFailed("./scripts/build-image.sh failed (its output is above)")
    command = [
        "podman",
        "build",
        "-q",
        "-f",
        "postgres.Containerfile",
        "--build-arg",
        f"BASE={BASE}",
        "-t",
        POSTGRES,
        ".",
    ]

    def postgres() -> None:
        say(f"$ (cd scripts/compose && {' '.join(command)})")
        done = subprocess.run(command, cwd=LOCAL, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise CheckFailed(f"building {POSTGRES} failed:\n{done.stdout}{done.stderr}")

    replaced(POSTGRES, postgres)
    replaced(IMAGE, lambda: project.compose("build"))
    say(f"images: {IMAGE} and {POSTGRES} on {BASE}, built in {time.monotonic() - began:.0f} s")


# -- the run ----------------------------------------------------------------------------------------


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def run(tmp: Path, compose_file: Path) -> None:
    project = prepare(tmp, compose_file)
    found = layout(project.config())
    say(f"compose file {compose_file}: services {', '.join(name for stage in found.stages() for name in stage)}")
    if not port_free(INTAKE_PORT):
        raise CheckFailed(
            f"port {INTAKE_PORT} is taken: the compose file publishes serve on it; stop what listens there"
        )
    if project.containers():
        say(f"removing what an earlier check left of project {PROJECT}")
        project.compose("down", "-v", "--remove-orphans")
    build(project)
    with fake_github(tmp) as (github, hold, port):
        secret, admin = secrets.token_hex(16), secrets.token_hex(16)
        write_settings(project, github, port, secret, admin)
        check = Check(
            project, found, Intakes({"serve": f"http://127.0.0.1:{INTAKE_PORT}"}, secret, admin, github, hold)
        )
        try:
            check.up()
            check.second_intake()
            check.deliveries()
            check.metrics()
            check.kill_worker()
            check.restart_database()
            if github.violations:
                raise CheckFailed(f"requests that break GitHub's schema or auth rules: {github.violations}")
            check.down()
        except BaseException:  # Ctrl-C too: the project is removed whatever stopped the check
            for c in project.containers():
                say(f"--- the last lines of {c['Names'][0]} ({c['State']}):\n{project.logs(c['Names'][0])}")
            try:
                check.remove()
            except CheckFailed as exc:  # the first failure is the one to report
                say(f"removing the project failed too: {exc}")
            raise


def containers_conf(tmp: Path) -> None:
    """As in scripts/build-image.sh: the engine's default ulimits cannot be applied on some hosts; runc runs here."""
    if not os.environ.get("CONTAINERS_CONF"):
        conf = tmp / "containers.conf"
        conf.write_text('[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n')
        os.environ["CONTAINERS_CONF"] = str(conf)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/check-compose.sh", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--compose-file", type=Path, default=ROOT / "deploy" / "compose.yaml", help="the file to check (a copy runs)"
    )
    args = parser.parse_args(argv)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ai-fix-compose-") as tmp:
        containers_conf(Path(tmp))
        try:
            run(Path(tmp), args.compose_file.resolve())
        except CheckFailed as exc:
            print(f"compose check failed: {exc}", file=sys.stderr)
            return 1
    say(f"compose check passed in {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
