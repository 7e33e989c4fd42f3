"""The base code with the change's test files laid over it, and attempts kept on their own ref (real git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.workspace import opening
from bot.workspace.git import Workspace
from tests.support.repos import git_as_user as git


@pytest.fixture
def ws(tmp_path: Path, remote_url: str, branch: str) -> Workspace:
    return opening.clone(remote_url, tmp_path / "job", branch=branch)


def test_the_base_code_with_the_changes_tests_laid_over_then_the_change_exactly_back(ws: Workspace) -> None:
    (ws.path / "src" / "app.py").write_text("def add(a, b):\n    return a * b\n")
    (ws.path / "tests").mkdir()
    (ws.path / "tests" / "test_app.py").write_text("def test_add(): ...\n")
    (ws.path / "src" / "util.py").unlink()
    (ws.path / "build").mkdir()
    (ws.path / "build" / "cache.bin").write_text("ignored by .gitignore")
    before = {
        p.relative_to(ws.path): p.read_bytes() for p in ws.path.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    with ws.laid_over(ws.base_sha, keep=["tests/test_app.py"]):
        assert "return a - b" in (ws.path / "src" / "app.py").read_text(), "the base commit's code"
        assert (ws.path / "tests" / "test_app.py").read_text() == "def test_add(): ...\n", "the change's test"
        assert (ws.path / "src" / "util.py").read_text() == "X = 1\n", "deleted by the change, there at the base"
        assert (ws.path / "build" / "cache.bin").exists(), "ignored files stay"
    after = {
        p.relative_to(ws.path): p.read_bytes() for p in ws.path.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    assert after == before
    assert ws.head_sha == ws.base_sha and [f.path for f in ws.stats().files] == [
        "src/app.py",
        "src/util.py",
        "tests/test_app.py",
    ]


def test_an_exception_inside_still_puts_the_change_back(ws: Workspace) -> None:
    (ws.path / "src" / "app.py").write_text("changed\n")
    with pytest.raises(RuntimeError), ws.laid_over(ws.base_sha):
        raise RuntimeError("the sandbox died")
    assert (ws.path / "src" / "app.py").read_text() == "changed\n"


def test_attempts_are_kept_on_top_of_each_other_on_a_ref_no_workflow_trigger_matches(
    ws: Workspace, remote: Path, tmp_path: Path, remote_url: str
) -> None:
    assert ws.keep_attempt("nothing changed") is None and not ws.has_attempts
    (ws.path / "src" / "app.py").write_text("first try\n")
    first = ws.keep_attempt("attempt 1")
    ws.rollback()
    (ws.path / "src" / "app.py").write_text("second try\n")
    second = ws.keep_attempt("attempt 2")
    assert first and second and ws.has_attempts and ws.head_sha == ws.base_sha
    ws.push(attempts=True)
    assert ws.attempts_ref == f"refs/ai-fix/attempts/{ws.branch}"
    log = git("log", "--format=%s", ws.attempts_ref, cwd=remote).splitlines()
    assert log == ["attempt 2", "attempt 1", "seed"]
    assert git("show", f"{ws.attempts_ref}:src/app.py", cwd=remote) == "second try"
    # No branch (what `push` workflows and pull requests start from) holds an attempt, nor the branch itself.
    assert git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=remote).split() == ["refs/heads/main"]
    # A later round on the same branch builds on the pushed attempts: its push goes on top, never forced.
    later = opening.clone(remote_url, tmp_path / "job2", branch=ws.branch)
    assert later.branch == ws.branch
    (later.path / "src" / "app.py").write_text("third try\n")
    assert later.keep_attempt("attempt 3") and later.has_attempts
    later.push(attempts=True)
    log = git("log", "--format=%s", ws.attempts_ref, cwd=remote).splitlines()
    assert log == ["attempt 3", "attempt 2", "attempt 1", "seed"]


def test_save_work_keeps_a_refused_change_on_the_attempts_branch(ws: Workspace) -> None:
    from bot.contract.models import Budget, Scope
    from bot.workspace.gate import PatchGate, apply_write

    gate = PatchGate.over(ws, Scope(allow=["src/**"]), Budget())
    assert apply_write(ws, "src/app.py", "written through the gate\n", gate, ws.stats()).allowed
    (ws.path / "src" / "app.py").chmod(0o755)  # then made executable, as a check might: the change is refused
    note = ws.save_work("wip", gate=gate)
    assert f"kept on {ws.attempts_ref}" in note and "executable" in note and ws.has_attempts
    assert ws.head_sha == ws.base_sha and not ws.stats().files
