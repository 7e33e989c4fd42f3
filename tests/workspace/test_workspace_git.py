from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bot.contract.models import Budget, Scope
from bot.errors import PolicyViolation
from bot.workspace import opening
from bot.workspace.branch import branch_name
from bot.workspace.gate import PatchGate, apply_write
from bot.workspace.git import Workspace
from bot.workspace.gitcmd import IDENTITY, WorkspaceError, auth_env, check_remote_url
from tests.support.repos import git_as_user as git

TOKEN = "ghs_FAKEinstallationTOKEN0123456789abcdef"


def _all_bytes_under(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.fixture
def ws(tmp_path: Path, remote_url: str, branch: str) -> Workspace:
    return opening.clone(remote_url, tmp_path / "job", branch=branch)


# ---- cloning and the token ----------------------------------------------------------------------


def test_clone_starts_a_fresh_branch_at_the_remote_head(ws: Workspace, remote: Path, branch: str) -> None:
    assert ws.branch == branch
    assert ws.base_sha == git("rev-parse", "main", cwd=remote) == ws.head_sha
    assert (ws.path / "src" / "app.py").read_text().startswith("def add")
    assert git("symbolic-ref", "--short", "HEAD", cwd=ws.path) == branch
    # The git directory lives outside the tree the sandbox mounts; the tree only has a pointer file.
    assert (ws.path / ".git").is_file()
    assert not Path(ws.state.git_dir).is_relative_to(ws.path)


def test_clone_never_reuses_a_branch_left_on_the_remote(
    tmp_path: Path, seed_repo: Path, remote: Path, branch: str
) -> None:
    """A closed PR's branch still on the remote: a new run starts `<branch>-2` (then `-3`) and pushes
    without touching the old one, instead of failing on a non-fast-forward push."""
    git("checkout", "-q", "-b", branch, cwd=seed_repo)
    (seed_repo / "old.txt").write_text("the closed PR's work\n")
    git("add", "old.txt", cwd=seed_repo)
    git("commit", "-q", "-m", "closed PR", cwd=seed_repo)
    git("push", "-q", str(remote), branch, cwd=seed_repo)
    old_tip = git("rev-parse", "HEAD", cwd=seed_repo)
    ws = opening.clone(f"file://{remote}", tmp_path / "job", branch=branch)
    assert ws.branch == f"{branch}-2"
    assert git("symbolic-ref", "--short", "HEAD", cwd=ws.path) == f"{branch}-2"
    assert ws.base_sha == git("rev-parse", "main", cwd=remote) and not (ws.path / "old.txt").exists()
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    ws.checkpoint("new attempt")
    ws.push()
    assert git("rev-parse", f"refs/heads/{branch}-2", cwd=remote) == ws.head_sha
    assert git("rev-parse", f"refs/heads/{branch}", cwd=remote) == old_tip
    third = opening.clone(f"file://{remote}", tmp_path / "job3", branch=branch)
    assert third.branch == f"{branch}-3"
    # Reopened after a crash, the job keeps the name it chose.
    assert opening.resume(tmp_path / "job").branch == f"{branch}-2"


def test_clone_at_a_given_ref(tmp_path: Path, seed_repo: Path, remote: Path, branch: str) -> None:
    first = git("rev-parse", "HEAD", cwd=seed_repo)
    (seed_repo / "later.txt").write_text("later\n")
    git("add", "later.txt", cwd=seed_repo)
    git("commit", "-q", "-m", "later", cwd=seed_repo)
    git("push", "-q", str(remote), "main", cwd=seed_repo)
    ws = opening.clone(f"file://{remote}", tmp_path / "job", branch=branch, ref=first)
    assert ws.base_sha == first and not (ws.path / "later.txt").exists()
    with pytest.raises(WorkspaceError, match="no commit"):
        opening.clone(f"file://{remote}", tmp_path / "job2", branch=branch, ref="no-such-branch")
    assert not (tmp_path / "job2").exists()  # a failed clone leaves nothing behind


def test_the_token_is_never_persisted(tmp_path: Path, remote_url: str, remote: Path, branch: str) -> None:
    ws = opening.clone(remote_url, tmp_path / "job", branch=branch, token=TOKEN)
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    ws.checkpoint("change X")
    ws.push(token=TOKEN)
    encoded = base64.b64encode(f"x-access-token:{TOKEN}".encode())
    for where in (tmp_path / "job", remote):
        stored = _all_bytes_under(where)
        assert TOKEN.encode() not in stored and encoded not in stored
    config = (Path(ws.state.git_dir) / "config").read_text()
    assert f"url = {remote_url}" in config and "extraheader" not in config.lower()
    assert git("--git-dir", ws.state.git_dir, "remote", "get-url", "origin", cwd=tmp_path) == remote_url


def test_auth_env_scopes_the_header_to_the_remote_host(tmp_path: Path) -> None:
    env = auth_env(TOKEN, "https://github.com/octo/demo.git")
    assert env["GIT_CONFIG_COUNT"] == "1"
    assert env["GIT_CONFIG_KEY_0"] == "http.https://github.com/.extraHeader"
    scheme, value = env["GIT_CONFIG_VALUE_0"].removeprefix("Authorization: ").split(" ")
    assert scheme == "Basic" and base64.b64decode(value).decode() == f"x-access-token:{TOKEN}"
    assert (
        auth_env(TOKEN, "https://ghe.example:8443/o/r")["GIT_CONFIG_KEY_0"]
        == "http.https://ghe.example:8443/.extraHeader"
    )

    # git itself reads it from the environment, for that host only.
    def header_for(url: str) -> str:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        done = subprocess.run(
            ["git", "config", "--get-urlmatch", "http.extraHeader", url],
            env={**clean, **env},
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )
        return done.stdout.strip()

    assert header_for("https://github.com/octo/demo.git") == env["GIT_CONFIG_VALUE_0"]
    assert header_for("https://evil.example/octo/demo.git") == ""


@pytest.fixture
def header_recorder() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records the Authorization header of each request and answers 404."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/octo/demo.git", seen
    server.shutdown()
    server.server_close()


def test_git_sends_the_header_over_the_wire_only_to_that_host(
    tmp_path: Path, header_recorder: tuple[str, list[str]]
) -> None:
    url, seen = header_recorder
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    clean.update(GIT_TERMINAL_PROMPT="0")

    def ls_remote(env: dict[str, str]) -> None:
        subprocess.run(
            ["git", "ls-remote", url], env={**clean, **env}, capture_output=True, cwd=tmp_path, timeout=30, check=False
        )

    ls_remote(auth_env(TOKEN, url))
    ls_remote(auth_env(TOKEN, "http://localhost:1/other.git"))  # a header for another host stays home
    assert seen[0] == auth_env(TOKEN, url)["GIT_CONFIG_VALUE_0"].removeprefix("Authorization: ")
    assert seen[1:] and all(header == "" for header in seen[1:])


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (f"https://x-access-token:{TOKEN}@github.com/o/r.git", "credentials"),
        ("https://user@github.com/o/r.git", "credentials"),
        ("ext::sh -c touch% /tmp/pwned", "https://"),
        ("--upload-pack=touch /tmp/pwned", "https://"),
        ("ssh://git@github.com/o/r.git", "https://"),
        ("/srv/repo", "https://"),
    ],
)
def test_remote_urls_are_checked(url: str, reason: str) -> None:
    with pytest.raises(WorkspaceError, match=reason):
        check_remote_url(url)


def test_clone_errors_say_what_to_do_without_the_token(tmp_path: Path, branch: str) -> None:
    with pytest.raises(WorkspaceError) as caught:
        opening.clone(f"file://{tmp_path}/missing.git", tmp_path / "job", branch=branch, token=TOKEN)
    message = str(caught.value)
    assert "git clone failed" in message and "check the repository URL" in message
    assert TOKEN not in message


def test_only_ai_fix_branches_and_fresh_directories(tmp_path: Path, remote_url: str, branch: str) -> None:
    with pytest.raises(PolicyViolation):
        opening.clone(remote_url, tmp_path / "job", branch="main")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(WorkspaceError, match="not empty"):
        opening.clone(remote_url, tmp_path / "busy", branch=branch)


# ---- checkpoints, rollback, diff ---------------------------------------------------------------


def test_checkpoint_commits_accepted_steps_as_ai_fix(ws: Workspace) -> None:
    assert ws.checkpoint("nothing yet") is None
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    sha = ws.checkpoint("-m looks like an option\n\nbody")
    assert sha == ws.head_sha != ws.base_sha
    log = git("log", "-1", "--format=%an <%ae>|%cn <%ce>|%B", cwd=ws.path)
    author, committer, message = log.split("|", 2)
    assert author == committer == f"{IDENTITY[0]} <{IDENTITY[1]}>"
    assert message.strip() == "-m looks like an option\n\nbody"
    assert ws.checkpoint("again") is None


def test_hooks_never_run(ws: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    for name in ("pre-commit", "commit-msg", "post-commit", "post-checkout", "pre-push", "reference-transaction"):
        script = Path(ws.state.git_dir) / "hooks" / name
        script.write_text(f"#!/bin/sh\ntouch {marker}\n")
        script.chmod(0o755)
    (ws.path / "README.md").write_text("# changed\n")
    ws.checkpoint("step")
    ws.rollback()
    ws.push()
    assert not marker.exists()
    assert git("config", "core.hooksPath", cwd=ws.path) == ws.state.hooks
    assert not any(Path(ws.state.hooks).iterdir()) and not Path(ws.state.hooks).is_relative_to(ws.path)


def test_rollback_returns_to_the_last_checkpoint(ws: Workspace) -> None:
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    good = ws.checkpoint("good step")
    (ws.path / "src" / "util.py").write_text("X = broken\n")
    (ws.path / "src" / "app.py").unlink()
    (ws.path / "scratch").mkdir()
    (ws.path / "scratch" / "notes.txt").write_text("junk\n")
    (ws.path / "debug.log").write_text("ignored by .gitignore\n")
    assert ws.rollback() == good
    assert (ws.path / "src" / "util.py").read_text() == "X = 2\n"
    assert (ws.path / "src" / "app.py").exists()
    assert not (ws.path / "scratch").exists()
    assert (ws.path / "debug.log").exists()  # ignored files (installed deps, caches) are kept


def test_diff_and_stats_cover_the_whole_change_including_new_files(ws: Workspace) -> None:
    (ws.path / "src" / "app.py").write_text(
        "def add(a, b):\n    return a + b + 0\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    ws.checkpoint("tweak add")
    (ws.path / "src" / "util.py").unlink()
    (ws.path / "src" / "new.py").write_text("A = 1\nB = 2\n")
    (ws.path / "run.sh").write_text("#!/bin/sh\n")
    (ws.path / "run.sh").chmod(0o755)
    (ws.path / "build").mkdir()
    (ws.path / "build" / "out.txt").write_text("ignored\n")
    stats = ws.stats()
    by_path = {f.path: f for f in stats.files}
    assert set(by_path) == {"src/app.py", "src/util.py", "src/new.py", "run.sh"}
    assert (by_path["src/app.py"].status, by_path["src/app.py"].added, by_path["src/app.py"].removed) == ("M", 1, 1)
    assert (by_path["src/util.py"].status, by_path["src/util.py"].removed, by_path["src/util.py"].new_mode) == (
        "D",
        1,
        "",
    )
    assert (by_path["src/new.py"].status, by_path["src/new.py"].added, by_path["src/new.py"].old_mode) == ("A", 2, "")
    assert by_path["run.sh"].new_mode == "100755"
    assert stats.lines == 1 + 1 + 1 + 2 + 1
    assert sorted([f.path for f in ws.stats().files]) == sorted(by_path)
    diff = ws.diff()
    assert "+++ b/src/new.py" in diff and "+    return a + b + 0" in diff and "--- a/src/util.py" in diff
    # Reading the change leaves the real index alone: new files are still untracked.
    assert git("status", "--porcelain", "--", "src/new.py", cwd=ws.path) == "?? src/new.py"
    assert ws.read_base("src/util.py") == b"X = 1\n" and ws.read_base("src/new.py") is None


def test_a_gated_checkpoint_keeps_only_what_was_written_through_the_gate(ws: Workspace) -> None:
    gate = PatchGate(ws.path, Scope(), Budget(), base_reader=ws.read_base)
    assert apply_write(ws, "src/util.py", "X = 2\n", gate, ws.stats()).allowed
    # What the project's checks might leave in the tree: a workflow, a symlink, plumbing, other changes.
    (ws.path / ".github" / "workflows").mkdir(parents=True)
    (ws.path / ".github" / "workflows" / "x.yml").write_text("on: push\n")
    (ws.path / "escape").symlink_to("/etc/passwd")
    (ws.path / ".gitmodules").write_text('[submodule "x"]\n\turl = https://evil.example/x.git\n')
    (ws.path / "src" / "app.py").write_text("changed by a check\n")
    (ws.path / "src" / "util.py").write_text("X = 666\n")  # after the model wrote it
    (ws.path / "README.md").unlink()
    (ws.path / "run.log").write_text("ignored: never committed, left alone\n")
    sha = ws.checkpoint("fine", gate=gate)
    assert sha and git("diff", "--name-only", ws.base_sha, sha, cwd=ws.path).split() == ["src/util.py"]
    assert (
        git("show", f"{sha}:src/util.py", cwd=ws.path) == "X = 2"
        and (ws.path / "src" / "util.py").read_text() == "X = 2\n"
    )
    assert gate.take_discarded() == [
        ".github/workflows/x.yml",
        ".gitmodules",
        "README.md",
        "escape",
        "src/app.py",
        "src/util.py",
    ]
    assert not (ws.path / "escape").is_symlink() and (ws.path / "README.md").read_text() == "# demo\n"
    assert (ws.path / "run.log").is_file()
    # A .gitignore a check rewrote to hide its file: once that is put back, the file is seen and removed too.
    (ws.path / ".gitignore").write_text("*\n")
    (ws.path / "hidden.py").write_text("x = 1\n")
    assert ws.checkpoint("nothing", gate=gate) is None and not (ws.path / "hidden.py").exists()
    assert gate.take_discarded() == [".gitignore", "hidden.py"]
    # The rules still hold for what was written through the gate: made executable by a check, it is refused.
    assert apply_write(ws, "src/util.py", "X = 4\n", gate, ws.stats()).allowed
    (ws.path / "src" / "util.py").chmod(0o755)
    with pytest.raises(PolicyViolation, match="executable"):
        ws.checkpoint("mode", gate=gate)
    assert ws.head_sha == sha and git("diff", "--cached", "--name-only", cwd=ws.path) == ""


def test_apply_write_then_checkpoint(ws: Workspace) -> None:
    gate = PatchGate(ws.path, Scope(allow=["src/**"]), Budget(), base_reader=ws.read_base)
    assert apply_write(ws, "src/util.py", "X = 3\n", gate, ws.stats()).allowed
    assert not apply_write(ws, ".git/config", "[core]\n", gate, ws.stats()).allowed
    assert not apply_write(ws, "README.md", "x\n", gate, ws.stats()).allowed
    ws.checkpoint("X = 3", gate=gate)
    assert [f.path for f in ws.stats().files] == ["src/util.py"]


def test_sandboxed_code_cannot_plant_git_config_that_the_host_runs(ws: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "fsmonitor-ran"
    gitfile = (ws.path / ".git").read_text()
    (ws.path / ".git").unlink()
    (ws.path / ".git").mkdir()
    (ws.path / ".git" / "config").write_text(f"[core]\n\tfsmonitor = touch {marker}\n\thooksPath = /tmp\n")
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    assert [f.path for f in ws.stats().files] == ["src/util.py"]
    ws.checkpoint("step")
    assert not marker.exists()
    assert (ws.path / ".git").read_text() == gitfile  # restored for anyone who runs git there later


# ---- pushing and continuing ------------------------------------------------------------------------


def test_push_never_forces(ws: Workspace, remote: Path, seed_repo: Path, branch: str) -> None:
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    ws.checkpoint("one")
    ws.push()
    assert git("rev-parse", f"refs/heads/{branch}", cwd=remote) == ws.head_sha
    (ws.path / "src" / "util.py").write_text("X = 3\n")
    ws.checkpoint("two")
    ws.push()
    assert git("rev-parse", f"refs/heads/{branch}", cwd=remote) == ws.head_sha
    # Someone else moves the branch: ai-fix refuses to overwrite it.
    git("fetch", "-q", str(remote), f"{branch}:{branch}", cwd=seed_repo)
    git("checkout", "-q", branch, cwd=seed_repo)
    (seed_repo / "human.txt").write_text("mine\n")
    git("add", "human.txt", cwd=seed_repo)
    git("commit", "-q", "-m", "human", cwd=seed_repo)
    git("push", "-q", str(remote), branch, cwd=seed_repo)
    theirs = git("rev-parse", "HEAD", cwd=seed_repo)
    (ws.path / "src" / "util.py").write_text("X = 4\n")
    ws.checkpoint("three")
    with pytest.raises(WorkspaceError, match="never force-pushes"):
        ws.push()
    assert git("rev-parse", f"refs/heads/{branch}", cwd=remote) == theirs


def test_checkout_existing_adds_commits_on_top(
    tmp_path: Path, ws: Workspace, remote: Path, remote_url: str, branch: str
) -> None:
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    first = ws.checkpoint("first round")
    ws.push()
    again = opening.checkout_existing(remote_url, tmp_path / "round2", branch=branch, token=TOKEN)
    assert again.base_sha == first and (again.path / "src" / "util.py").read_text() == "X = 2\n"
    (again.path / "src" / "util.py").write_text("X = 5\n")
    second = again.checkpoint("review feedback")
    again.push(token=TOKEN)
    assert git("rev-list", "--max-count=2", f"refs/heads/{branch}", cwd=remote).split() == [second, first]
    assert [f.path for f in again.stats().files] == ["src/util.py"]
    with pytest.raises(WorkspaceError, match="does not exist"):
        opening.checkout_existing(remote_url, tmp_path / "round3", branch=branch_name(99, "nothing"))


def test_resume_continues_from_the_last_checkpoint(tmp_path: Path, ws: Workspace) -> None:
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    good = ws.checkpoint("good")
    (ws.path / "src" / "util.py").write_text("half-written")
    (ws.path / "partial.py").write_text("")
    resumed = opening.resume(tmp_path / "job")
    assert (resumed.head_sha, resumed.base_sha, resumed.branch) == (good, ws.base_sha, ws.branch)
    assert (resumed.path / "src" / "util.py").read_text() == "X = 2\n"
    assert not (resumed.path / "partial.py").exists()
    with pytest.raises(WorkspaceError, match="not an ai-fix job directory"):
        opening.resume(tmp_path)


# ---- local mode ---------------------------------------------------------------------------------


def test_local_mode_leaves_the_work_on_a_branch_of_the_users_repo(tmp_path: Path, seed_repo: Path) -> None:
    (seed_repo / "README.md").write_text("# uncommitted work of the user\n")
    branch = branch_name(None, "Rename add")
    ws = opening.local(seed_repo, tmp_path / "job", branch=branch)
    assert ws.base_sha == git("rev-parse", "HEAD", cwd=seed_repo)
    assert (ws.path / "README.md").read_text() == "# demo\n"  # committed state only
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    sha = ws.checkpoint("step")
    # The user's checkout is untouched, and the branch is theirs.
    assert git("symbolic-ref", "--short", "HEAD", cwd=seed_repo) == "main"
    assert (seed_repo / "README.md").read_text() == "# uncommitted work of the user\n"
    assert git("rev-parse", f"refs/heads/{branch}", cwd=seed_repo) == sha
    with pytest.raises(WorkspaceError, match="nothing to push"):
        ws.push()
    with pytest.raises(WorkspaceError, match="already exists"):
        opening.local(seed_repo, tmp_path / "job2", branch=branch)
    assert not (tmp_path / "job2").exists()
    (tmp_path / "plain").mkdir()
    with pytest.raises(WorkspaceError, match="not a git repository"):
        opening.local(tmp_path / "plain", tmp_path / "job3", branch=branch_name(None, "x"))
    resumed = opening.resume(tmp_path / "job")
    assert resumed.head_sha == sha
    resumed.remove()
    assert not (tmp_path / "job").exists()
    assert git("rev-parse", f"refs/heads/{branch}", cwd=seed_repo) == sha
    assert str(tmp_path / "job") not in git("worktree", "list", cwd=seed_repo)


def test_local_mode_can_push_when_given_a_remote(
    tmp_path: Path, seed_repo: Path, remote: Path, remote_url: str
) -> None:
    branch = branch_name(None, "Push me")
    ws = opening.local(seed_repo, tmp_path / "job", branch=branch)
    (ws.path / "src" / "util.py").write_text("X = 2\n")
    ws.checkpoint("step")
    ws.push(remote_url=remote_url)
    assert git("rev-parse", f"refs/heads/{branch}", cwd=remote) == ws.head_sha


def test_describe_gives_the_base_commit_s_tag_and_distance_in_clones_and_worktrees(
    tmp_path: Path, seed_repo: Path, branch: str
) -> None:
    git("tag", "-a", "v1.4.0", "-m", "release", cwd=seed_repo)
    (seed_repo / "README.md").write_text("# demo, later\n")
    git("commit", "-q", "-am", "after the release", cwd=seed_repo)
    sha = git("rev-parse", "--short=7", "HEAD", cwd=seed_repo).strip()
    cloned = opening.clone(f"file://{seed_repo}", tmp_path / "job", branch=branch)
    local = opening.local(seed_repo, tmp_path / "local-job", branch="ai-fix/local-describe")
    for ws in (cloned, local):
        described = ws.describe()
        assert described.startswith("v1.4.0-1-g") and sha.startswith(described.removeprefix("v1.4.0-1-g")[:7])
