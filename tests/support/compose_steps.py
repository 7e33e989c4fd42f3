"""The compose check's steps against the running project, each printing what it did and measured."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from dataclasses import dataclass, field

from bot.vocabulary import NEEDS_CLARIFICATION
from tests.support.compose_project import CheckFailed, Project, podman, say, wait_until
from tests.support.compose_world import Intakes
from tests.support.webhooks import REPO

END = NEEDS_CLARIFICATION
"""How every job of the check ends: the issues give no acceptance criteria."""
ISSUES = range(101, 107)


@dataclass(frozen=True)
class Layout:
    """What the check drives, read from the merged configuration (compose_check.layout)."""

    depends: dict[str, dict[str, str]]
    """service → {service it depends on: condition}"""
    workers: list[str]
    """The services running `ai-fix worker` (two in the file)."""

    def stages(self) -> list[list[str]]:
        """The services in the order compose starts them: each stage depends only on earlier ones."""
        stages: list[list[str]] = []
        started: set[str] = set()
        while len(started) < len(self.depends):
            ready = sorted(n for n, deps in self.depends.items() if n not in started and set(deps) <= started)
            if not ready:
                raise CheckFailed(f"depends_on goes round in a circle among {sorted(set(self.depends) - started)}")
            stages.append(ready)
            started.update(ready)
        return stages


def ids(values: list[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def numbers(job_ids: list[int]) -> str:
    return ", ".join(map(str, job_ids))


@dataclass
class Check:
    project: Project
    layout: Layout
    intakes: Intakes
    hosts: dict[str, str] = field(default_factory=dict)
    """container hostname → service: a lease's owner starts with the hostname of the worker holding it."""
    killed: str = ""
    """The worker container the kill step killed (it stays down: podman does not restart a killed container)."""

    def worker_of(self, owner: str) -> str:
        return self.hosts.get(owner.split(":", 1)[0], owner)

    def ended(self, job_ids: list[int], timeout: float) -> float:
        """Seconds until every job of `job_ids` has ended needs_clarification."""
        query = f"SELECT status, count(*) FROM jobs WHERE id IN ({numbers(job_ids)}) GROUP BY status"
        return self.project.wait_sql(query, [[END, str(len(job_ids))]], timeout, f"jobs {job_ids} ending {END}")

    def alive(self, container: str) -> None:
        if not self.project.running(container):
            raise CheckFailed(f"{container} exited:\n{self.project.logs(container)}")

    # -- start ------------------------------------------------------------------------------------

    def up(self) -> None:
        """The file's services started stage by stage, each once what it depends on meets the condition named.

        `up -d` alone does that under docker compose (or podman 4.6+, untried here); under podman 4.3
        (Debian 12's) it cannot: podman-compose turns depends_on into `--requires`, and podman 4.3 will not
        start a container whose required container requires another (serve → migrate → db); podman-compose
        also skips `service_healthy` before podman 4.6. `--no-deps` leaves the order to this."""
        began = time.monotonic()
        met: set[tuple[str, str]] = set()
        for stage in self.layout.stages():
            for name in stage:
                for dependency, condition in self.layout.depends[name].items():
                    if (dependency, condition) not in met:
                        self.wait_for(dependency, condition)
                        met.add((dependency, condition))
            self.project.compose("up", "-d", "--no-deps", *stage)
        serve = self.project.container("serve")
        wait_until("serve answering /healthz", 180, lambda: self.serving("serve", serve))
        for worker in self.layout.workers:
            name = self.project.container(worker)
            wait_until(f"{worker} taking jobs", 180, lambda name=name: self.working(name))
            self.hosts[podman("inspect", "--format", "{{.Config.Hostname}}", name).strip()] = worker
        applied = self.project.logs(self.project.container("migrate")).strip() or "(printed nothing)"
        say(
            f"compose up: {time.monotonic() - began:.0f} s from the first `up` until serve answered /healthz and "
            f"{', '.join(self.layout.workers)} were taking jobs (migrate: {applied})"
        )

    def wait_for(self, service: str, condition: str) -> None:
        """Until `service` meets a depends_on condition: healthy (its own healthcheck), exited 0, or started."""
        container = self.project.container(service)
        began = time.monotonic()
        if condition == "service_healthy":
            # Run by hand: podman schedules healthchecks with systemd timers, and there is no systemd here.
            wait_until(f"{service} healthy", 120, lambda: self.healthy(container))
            what = "healthy (its healthcheck passed)"
        elif condition == "service_completed_successfully":
            code = podman("wait", container, timeout=180).strip()
            if code != "0":
                raise CheckFailed(f"{service} exited {code}:\n{self.project.logs(container)}")
            what = "completed (exit 0)"
        else:
            wait_until(f"{service} running", 60, lambda: self.project.running(container))
            what = "running"
        say(f"{service}: {what} after {time.monotonic() - began:.0f} s")

    def healthy(self, container: str) -> bool:
        self.alive(container)
        return (
            subprocess.run(["podman", "healthcheck", "run", container], capture_output=True, check=False).returncode
            == 0
        )

    def serving(self, intake: str, container: str) -> bool:
        self.alive(container)
        return self.intakes.health(intake) == 200

    def working(self, container: str) -> bool:
        self.alive(container)
        return "workers on postgresql://" in self.project.logs(container, 50)

    def second_intake(self) -> None:
        """The file's `serve` once more, on a port of its own (as behind a load balancer), on the same database."""
        began = time.monotonic()
        name = f"{self.project.name}_serve_2"
        self.project.compose("run", "-d", "--no-deps", "--name", name, "-p", "127.0.0.1::8000", "serve")
        port = podman("port", name, "8000/tcp").strip().splitlines()[0].rsplit(":", 1)[1]
        self.intakes.urls["serve-2"] = f"http://127.0.0.1:{port}"
        wait_until("serve-2 answering /healthz", 180, lambda: self.serving("serve-2", name))
        say(
            f"second intake: {name} (service serve) answered /healthz on port {port} {time.monotonic() - began:.0f} s later"
        )

    # -- deliveries and jobs ----------------------------------------------------------------------

    def deliveries(self) -> None:
        """Each issue's delivery to one intake, redelivered to the other and back: stored once, one job each, all ended."""
        began = time.monotonic()
        sent, job_ids = [], []
        for number in ISSUES:
            body, delivery = self.intakes.labelled(number), str(uuid.uuid4())
            first, other = ("serve", "serve-2") if number % 2 else ("serve-2", "serve")
            job_ids.append(int(self.intakes.expect(first, body, delivery, 202, "queued")["job_id"]))
            self.intakes.expect(other, body, delivery, 200, "duplicate")
            self.intakes.expect(first, body, delivery, 200, "duplicate")
            sent.append(delivery)
        say(
            f"deliveries: {len(sent)} issues labelled, each delivery sent 3 times: to one intake (202 queued), "
            f"redelivered to the other and back (200 duplicate); {sum(n % 2 for n in ISSUES)} first to serve, "
            f"{sum(1 - n % 2 for n in ISSUES)} first to serve-2"
        )
        n = str(len(sent))
        [stored] = self.project.sql(f"SELECT count(*), count(DISTINCT id) FROM deliveries WHERE id IN ({ids(sent)})")
        [jobs] = self.project.sql(
            f"SELECT count(*), count(DISTINCT number) FROM jobs WHERE repo = '{REPO}' "
            f"AND number BETWEEN {ISSUES[0]} AND {ISSUES[-1]}"
        )
        [[triggers]] = self.project.sql(f"SELECT count(*) FROM triggers WHERE delivery_id IN ({ids(sent)})")
        if stored != [n, n] or jobs != [n, n] or triggers != n:
            raise CheckFailed(
                f"PostgreSQL holds {stored[0]} deliveries, {jobs[0]} jobs and {triggers} triggers for the {n} "
                "deliveries sent 3 times each; expected one of each per delivery"
            )
        took = self.ended(job_ids, 120)
        claims = self.project.sql(f"SELECT data FROM events WHERE event = 'claimed' AND job_id IN ({numbers(job_ids)})")
        taken: dict[str, int] = {}
        for [data] in claims:
            worker = self.worker_of(json.loads(data)["worker"])
            taken[worker] = taken.get(worker, 0) + 1
        comments = sum(len(self.intakes.github.bot_comments(REPO, number)) for number in ISSUES)
        say(
            f"PostgreSQL: {stored[0]} deliveries (each stored once), {jobs[0]} jobs, {triggers} triggers; "
            f"all {len(job_ids)} jobs {END} {took:.0f} s after the last delivery, taken by "
            f"{', '.join(f'{w}: {k}' for w, k in sorted(taken.items()))} (AIFIX_MAX_RUNNING_PER_REPO=1: one at a "
            f"time in the one repository); the fake GitHub has {comments} comments asking for criteria "
            f"({time.monotonic() - began:.0f} s in all)"
        )

    def metrics(self) -> None:
        wanted = ('aifix_deliveries_total{event="issues"', f'aifix_jobs{{kind="issue",status="{END}"')
        for intake in self.intakes.urls:
            lines = [line for line in self.intakes.metrics(intake).splitlines() if line.startswith(wanted)]
            say(f"/metrics on {intake}: 200; " + "; ".join(lines))

    # -- failures ---------------------------------------------------------------------------------

    def kill_worker(self) -> None:
        """A worker killed while its job waits on GitHub: the lease expires and another attempt ends the job."""
        hold = self.intakes.hold
        hold.arm("/contents/")
        body = self.intakes.labelled(ISSUES[-1] + 1)
        job_id = int(self.intakes.expect("serve", body, str(uuid.uuid4()), 202, "queued")["job_id"])
        if not hold.arrived.wait(120):
            raise CheckFailed(f"job {job_id} never read the repository's contents from the fake GitHub")
        [[owner]] = self.project.sql(f"SELECT lease_owner FROM jobs WHERE id = {job_id}")
        worker = self.worker_of(owner)
        self.killed = self.project.container(worker)
        say(f"$ podman kill {self.killed}   # job {job_id} is mid-way in it: leased, waiting on GET {hold.path}")
        podman("kill", self.killed)
        hold.released.set()
        took = self.ended([job_id], 150)
        events = self.project.sql(f"SELECT event, data FROM events WHERE job_id = {job_id} ORDER BY id")
        claims = [json.loads(data) for event, data in events if event == "claimed"]
        expired = [event for event, _ in events if event == "lease_expired"]
        snapshots = [event for event, _ in events if event == "snapshot_taken"]
        if len(claims) != 2 or len(expired) != 1 or len(snapshots) != 1:
            raise CheckFailed(
                f"job {job_id}: expected one lease expiry, two claims, one snapshot; its history: {events}"
            )
        running, restarts = podman("inspect", "--format", "{{.State.Running}} {{.RestartCount}}", self.killed).split()
        say(
            f"kill: job {job_id}'s lease expired, {self.worker_of(claims[1]['worker'])} took it again "
            f"(attempt {claims[1]['attempt']}, on the snapshot the first attempt stored) and ended it {END} "
            f"{took:.0f} s after the kill; {worker} after the kill: running={running}, restarts={restarts} "
            "(restart: unless-stopped does not bring back a container podman killed)"
        )

    def restart_database(self) -> None:
        """PostgreSQL stopped: both intakes refuse (503); started again, they recover by themselves and nothing
        acknowledged is lost."""
        db = self.project.container("db")
        job_ids = []
        for number, intake in ((201, "serve"), (202, "serve-2")):
            body = self.intakes.labelled(number)
            job_ids.append(int(self.intakes.expect(intake, body, str(uuid.uuid4()), 202, "queued")["job_id"]))
        say(f"$ podman stop {db}   # right after two deliveries were acknowledged (jobs {job_ids})")
        podman("stop", db)
        refused: dict[str, tuple[str, bytes]] = {}
        answers = []
        for number, intake in ((203, "serve"), (204, "serve-2")):
            body, delivery = self.intakes.labelled(number), str(uuid.uuid4())
            began = time.monotonic()
            status = self.intakes.send(intake, body, delivery).status_code
            refused_in = time.monotonic() - began
            health = self.intakes.health(intake)
            if (status, health) != (503, 503):
                raise CheckFailed(
                    f"with PostgreSQL stopped, {intake} answered a delivery {status} and /healthz {health}; expected 503"
                )
            refused[delivery] = (intake, body)
            answers.append(
                f"{intake} a delivery after {refused_in:.0f} s, /healthz after {time.monotonic() - began - refused_in:.0f} s"
            )
        say(f"PostgreSQL stopped: 503 from {'; '.join(answers)}")
        say(f"$ podman start {db}")
        podman("start", db)
        started = time.monotonic()
        recovered: dict[str, float] = {}
        while len(recovered) < len(self.intakes.urls):
            if time.monotonic() - started > 120:
                raise CheckFailed(f"only {sorted(recovered) or 'no intake'} answered /healthz 200 within 120 s")
            for intake in self.intakes.urls:
                if intake not in recovered and self.intakes.health(intake) == 200:
                    recovered[intake] = time.monotonic() - started
            time.sleep(0.25)
        for delivery, (intake, body) in refused.items():  # as GitHub's "Redeliver" would
            job_ids.append(self.redelivered(intake, body, delivery))
        took = self.ended(job_ids, 150)
        attempts = self.project.sql(f"SELECT id, attempts FROM jobs WHERE id IN ({numbers(job_ids)}) ORDER BY id")
        acknowledged = sorted(set(self.intakes.acknowledged))
        [[stored]] = self.project.sql(f"SELECT count(*) FROM deliveries WHERE id IN ({ids(acknowledged)})")
        if stored != str(len(acknowledged)):
            raise CheckFailed(f"{len(acknowledged)} deliveries were acknowledged; PostgreSQL holds {stored} of them")
        say(
            "restart: "
            + ", ".join(f"{intake} answered /healthz 200 {s:.0f} s after the start" for intake, s in recovered.items())
            + f" with no restart of its own; the 2 refused deliveries redelivered (202, each with its job); jobs {job_ids} ended "
            f"{END} within {took:.0f} s (attempts: {', '.join(f'job {i}: {n}' for i, n in attempts)}; a job mid-way "
            f"when PostgreSQL stopped is taken again once its lease runs out); all {len(acknowledged)} deliveries "
            "acknowledged during the check are in PostgreSQL"
        )

    def redelivered(self, intake: str, body: bytes, delivery: str) -> int:
        """A refused delivery sent again once the database is back: its job's id. Right after the outage the
        intake may still hold a stored delivery whose meaning it has not applied yet, and answers "stored" (in
        order behind it: the job is made by the processing pass a moment later) instead of "queued"."""
        answer = self.intakes.send(intake, body, delivery)
        data = answer.json()
        if answer.status_code != 202 or data.get("outcome") not in ("queued", "stored"):
            raise CheckFailed(f"{intake} answered redelivery {delivery} with {answer.status_code} {data}; expected 202")
        if data["outcome"] == "queued":
            return int(data["job_id"])
        began = time.monotonic()
        while time.monotonic() - began < 60:
            found = self.project.sql(f"SELECT job_id FROM triggers WHERE delivery_id = '{delivery}'")
            if found:
                return int(found[0][0])
            time.sleep(0.5)
        raise CheckFailed(f"{intake} stored redelivery {delivery} but made no job for it within 60 s")

    # -- stop -------------------------------------------------------------------------------------

    def down(self) -> None:
        """ai-fix's containers stopped before PostgreSQL (each must exit 0), then `down -v`: nothing may be left.

        podman-compose's `down` stops every container at once (docker compose stops dependents first), so
        the intakes and workers drain on SIGTERM with their database going away under them, outlast the
        10 s and are killed (exit 137). Stopped first, they drain and exit 0."""
        began = time.monotonic()
        apps = [name for name in self.layout.depends if name not in ("db", "migrate")]
        self.project.compose("stop", *apps)
        second = f"{self.project.name}_serve_2"
        say(f"$ podman stop {second}")
        podman("stop", second)
        codes = {
            name: podman("inspect", "--format", "{{.State.ExitCode}}", name).strip()
            for name in [*map(self.project.container, apps), second]
            if name != self.killed
        }
        if set(codes.values()) != {"0"}:
            raise CheckFailed(f"exit codes on SIGTERM: {codes}; expected 0 from each (a drained shutdown)")
        killed = f" ({self.killed} was killed by the kill step)" if self.killed else ""
        say(f"stop: {', '.join(codes)} exited 0 on SIGTERM within {time.monotonic() - began:.0f} s{killed}")
        self.remove()

    def remove(self) -> None:
        """`down -v --remove-orphans`, then no container, named volume or anonymous volume of the project is left.

        podman-compose removes the containers without their anonymous volumes (the image's `VOLUME /data`),
        which docker compose's `down -v` removes: those are named before and removed here."""
        anonymous = [
            name
            for c in self.project.containers()
            for name in podman(
                "inspect",
                "--format",
                '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}',
                c["Names"][0],
            ).split()
            if not name.startswith(f"{self.project.name}_")
        ]
        began = time.monotonic()
        self.project.compose("down", "-v", "--remove-orphans")
        took = time.monotonic() - began
        left = [c["Names"][0] for c in self.project.containers()]
        volumes = podman(
            "volume", "ls", "-q", "--filter", f"label=io.podman.compose.project={self.project.name}"
        ).split()
        stale = [v for v in anonymous if subprocess.run(["podman", "volume", "exists", v], check=False).returncode == 0]
        if stale:
            podman("volume", "rm", *stale)
        if left or volumes:
            raise CheckFailed(f"after down, containers {left} and volumes {volumes} are left")
        say(
            f"compose down: {took:.0f} s; no container, network or named volume of the project is left "
            f"(the {len(stale)} anonymous /data volumes podman-compose left were removed by the check)"
        )
