"""Setup snapshots for the container backends: what a repository's setup made, kept as a local image.

After the setup commands succeed, what they created in the workspace (the project's environment
folder, `node_modules`, ...) is copied by a one-off container of the job's image into `/ai-fix-setup`,
given to the user the job's commands run as, and that container is committed as `localhost/ai-fix-setup/<repository>:<key>`. The key digests the
image's id and the job's setup key (the setup commands, the setup secrets' names and the contents of
the files setup depends on). A later job of the repository with the same key starts its container
from that image and copies the files back into its fresh workspace instead of running setup. The
newest N snapshots of each repository are kept; older ones are removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.sandbox.base import SandboxJob
from bot.sandbox.engine import Engine, last_line, run_engine
from bot.sandbox.environment import WORKDIR
from bot.sandbox.identity import Identity
from bot.sandbox.pull import image_id

log = logging.getLogger(__name__)

SNAPSHOTS = "localhost/ai-fix-setup"
KEPT = "/ai-fix-setup"
"""Where a snapshot image holds the setup's files (workspace-relative paths below it)."""
REPO_LABEL = "ai-fix.setup-repo"
CREATED_LABEL = "ai-fix.setup-created"
COPY_TIMEOUT_S = 900


def repo_slug(repo: str) -> str:
    """An image-name-safe name for a repository, unique per repository string."""
    readable = re.sub(r"[^a-z0-9]+", "-", repo.lower()).strip("-")[-40:].strip("-") or "repo"
    return f"{readable}-{hashlib.sha256(repo.encode()).hexdigest()[:8]}"


def snapshot_tag(repo: str, setup_key: str, base_id: str) -> str:
    digest = hashlib.sha256(f"{base_id}\n{setup_key}".encode()).hexdigest()[:24]
    return f"{SNAPSHOTS}/{repo_slug(repo)}:{digest}"


def find(engine: Engine, tag: str) -> bool:
    return image_id(engine, tag) is not None


def _copies(outputs: Sequence[str], src: str, dst: str) -> list[str]:
    """One line per path: copied from `src` to `dst` with links, modes and times (not owners), parents made as
    needed; a path already there (a resumed job's workspace) is left as it is."""
    lines = []
    for rel in outputs:
        frm, to = shlex.quote(f"{src}/{rel}"), shlex.quote(f"{dst}/{rel}")
        lines.append(
            f'[ -e {to} ] || {{ mkdir -p "$(dirname {to})" && cp -R --preserve=mode,timestamps,links {frm} {to}; }}'
        )
    return lines


def copy_script(outputs: Sequence[str], owner: Identity) -> str:
    """What the copy container runs: each output into KEPT/files, and KEPT/restore.sh that puts them back.

    The copies are given to `owner`, the user the job's commands (and so the restore) run as: copied by root, a
    folder only its owner may enter (pdm-backend's `.pdm-build`) would otherwise stay closed to the restore.
    """
    restore = "\n".join(["set -e", *_copies(outputs, f"{KEPT}/files", WORKDIR)])
    return "\n".join(
        ["set -e", f"mkdir -p {KEPT}/files", *_copies(outputs, WORKDIR, f"{KEPT}/files"),
         f"chown -R -h {owner.spec} {KEPT}/files",
         f"cat > {KEPT}/restore.sh <<'AI_FIX_RESTORE'", restore, "AI_FIX_RESTORE"]
    )  # fmt: skip


RESTORE = f"sh {KEPT}/restore.sh"
"""Run in the job's container (as the sandbox user) to put the setup's files back into the fresh workspace."""


def commit(engine: Engine, container: str, tag: str, repo: str, *, cwd: Path | None) -> str | None:
    """Commit the finished copy container as `tag`, labelled with its repository and time; the engine's error, or None."""
    done = run_engine(
        engine, "commit",
        "--change", f"LABEL {REPO_LABEL}={repo_slug(repo)}",
        "--change", f"LABEL {CREATED_LABEL}={time.time_ns()}",
        container, tag, timeout=COPY_TIMEOUT_S, cwd=cwd,
    )  # fmt: skip
    return None if done.returncode == 0 else last_line(done.stderr, f"exit {done.returncode}")


def prune(engine: Engine, repo: str, keep: int, *, cwd: Path | None = None) -> list[str]:
    """Remove all but the newest `keep` snapshots of `repo` (one in use by a running job stays); the tags removed."""
    listed = run_engine(
        engine, "images", "--filter", f"label={REPO_LABEL}={repo_slug(repo)}", "--format", "{{.Repository}}:{{.Tag}}",
        cwd=cwd,
    )  # fmt: skip
    tags = sorted({t for t in listed.stdout.decode().split() if not t.endswith(":<none>")})
    if len(tags) <= keep:
        return []
    inspected = run_engine(engine, "image", "inspect", *tags, cwd=cwd)
    try:
        images = json.loads(inspected.stdout or b"[]")
    except json.JSONDecodeError:
        return []
    created: dict[str, int] = {}
    for image in images:
        labels = (image.get("Config") or {}).get("Labels") or {}
        for tag in image.get("RepoTags") or []:
            if tag in tags:
                created[tag] = int(labels.get(CREATED_LABEL, "0") or 0)
    newest_first = sorted(created, key=lambda t: created[t], reverse=True)
    removed = []
    for tag in newest_first[keep:]:
        if run_engine(engine, "rmi", tag, cwd=cwd).returncode == 0:
            removed.append(tag)
    if removed:
        log.info("setup snapshots of %s pruned: %s", repo, ", ".join(removed))
    return removed


@dataclass(frozen=True)
class SetupSnapshots:
    """A job's setup snapshots on one engine: the one its containers start from, the one made after its setup."""

    engine: Engine
    job: SandboxJob
    base_id: str
    """The id of the job's configured image, which every snapshot of it is made from."""
    found: str | None
    """The snapshot made by an earlier job with the same setup key, which the job's containers run."""

    @classmethod
    def look_up(cls, engine: Engine, job: SandboxJob, base_id: str) -> SetupSnapshots:
        tag = snapshot_tag(job.repo, job.setup_key, base_id)
        kept = bool(job.setup_key) and job.keep_snapshots > 0
        return cls(engine, job, base_id, tag if kept and find(engine, tag) else None)

    def save(
        self,
        outputs: Sequence[str],
        *,
        copier: str,
        owner: Identity,
        workspace: Path,
        ro_paths: Sequence[Path],
        cwd: Path,
    ) -> str | None:
        """Keep what setup made (workspace-relative `outputs`) as a snapshot; its tag, or None when none was made.

        `copier` names the one-off container that copies the outputs out of `workspace`; `owner` is who the job's
        commands run as, who the copies are given to.
        """
        job = self.job
        if not (job.setup_key and job.keep_snapshots > 0 and outputs):
            return None
        if any("\n" in path for path in outputs):  # the restore script is a here-document: one path a line
            log.warning("setup snapshot not made: a path setup created has a newline in its name")
            return None
        tag = snapshot_tag(job.repo, job.setup_key, self.base_id)
        mounts = [f for path in ro_paths for f in ("-v", f"{path}:{path}:ro")]
        copy = run_engine(
            # Root with only DAC_OVERRIDE, to write KEPT into the image's own root (often read-only to all), and CHOWN,
            # to give the copies to the job's user; no network.
            self.engine, "run", "--name", copier, "--user", "0", "--network", "none", "--cap-drop", "ALL",
            "--cap-add", "DAC_OVERRIDE", "--cap-add", "CHOWN", "--security-opt", "no-new-privileges",
            "-v", f"{workspace}:{WORKDIR}:ro", *mounts, self.base_id, "sh", "-c", copy_script(outputs, owner),
            timeout=COPY_TIMEOUT_S, cwd=cwd,
        )  # fmt: skip
        try:
            problem = (
                commit(self.engine, copier, tag, job.repo, cwd=cwd)
                if copy.returncode == 0
                else last_line(copy.stderr or copy.stdout, f"exit {copy.returncode}")
            )
        finally:
            run_engine(self.engine, "rm", "-f", copier, cwd=cwd)
        if problem:
            log.warning("setup snapshot %s not made: %s", tag, problem)
            return None
        prune(self.engine, job.repo, job.keep_snapshots, cwd=cwd)
        return tag
