from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.contract.globs import glob_match, path_in_scope
from bot.contract.models import ALWAYS_DENIED, Budget, Scope
from bot.errors import AiFixError, PolicyViolation
from bot.workspace.gate import MAX_FILE_BYTES, PatchGate, apply_write, line_counts
from bot.workspace.models import DiffStats, FileChange
from bot.workspace.pathrules import GateRefusal, canonical_path


class _Dir:
    """apply_write only needs the workspace's path; the gate tests run on a plain directory."""

    def __init__(self, path: Path) -> None:
        self.path = path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """tmp/ws with src/a.py, an executable script, a twin directory tmp/ws-evil beside it, and symlinks in and out."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("one\ntwo\nthree\n")
    (ws / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "migrations").mkdir()
    twin = tmp_path / "ws-evil"
    twin.mkdir()
    (twin / "target.py").write_text("outside\n")
    os.symlink("../ws-evil", ws / "twin")  # out of the workspace, into its prefix twin
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0\n")
    os.symlink(outside, ws / "etc")  # out of the workspace, absolute
    os.symlink("src", ws / "alias")  # a directory inside the workspace
    os.symlink("src/a.py", ws / "b.py")  # a file inside the workspace
    return ws


def gate_for(root: Path, **budget: int) -> PatchGate:
    return PatchGate(root, Scope(allow=["**"], deny=["migrations/**"]), Budget(**budget))


NOTHING = DiffStats()


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../ws-evil/target.py", "escapes the workspace"),
        ("src/../../ws-evil/target.py", "escapes the workspace"),
        ("src/../a.py", "escapes the workspace"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("twin/target.py", "'twin' is a symbolic link"),
        ("twin/new.py", "'twin' is a symbolic link"),
        ("etc/passwd", "'etc' is a symbolic link"),
        ("alias/a.py", "'alias' is a symbolic link"),
        ("b.py", "'b.py' is a symbolic link"),
        (".git/config", "git's own directory"),
        (".GIT/config", "git's own directory"),
        ("src/.Git/hooks/pre-commit", "git's own directory"),
        (".git./config", "git's own directory"),
        (".g\u200cit/config", "git's own directory"),
        ("GIT~1/config", "git's own directory"),
        (".github/workflows/ci.yml", "protected (rule '.github/workflows/**')"),
        (".GitHub/Workflows/x.yml", "protected (rule '.github/workflows/**')"),
        (".github/workflows./x.yml", "protected"),
        (".github/AI-FIX.yml", "protected (rule '.github/ai-fix.yml')"),
        ("migrations/0001_init.py", "denied by scope rule 'migrations/**'"),
        ("Migrations/0002.py", "denied by scope rule 'migrations/**'"),
        ("src/a\x00.py", "control character (NUL"),
        ("src/a\n.py", "control character"),
        ("src\\a.py", "backslash"),
        ("", "empty path"),
        ("./", "repository root"),
        ("src", "directory or special file"),
        ("src/a.py/x", "is a file, not a directory"),
    ],
)
def test_refused_paths(root: Path, path: str, reason: str) -> None:
    decision = gate_for(root).check_path(path)
    assert not decision.allowed
    assert reason in decision.reason


def test_absolute_path_into_the_prefix_twin_is_refused(root: Path) -> None:
    twin_file = str(root.parent / "ws-evil" / "target.py")
    assert twin_file.startswith(str(root))  # the string-prefix trap this guards against
    decision = apply_write(_Dir(root), twin_file, "pwned\n", gate_for(root), NOTHING)
    assert not decision.allowed and "absolute" in decision.reason
    assert (root.parent / "ws-evil" / "target.py").read_text() == "outside\n"


def test_canonical_form(root: Path) -> None:
    decision = gate_for(root).check_path("./src//a.py")
    assert decision.allowed and decision.path == "src/a.py"
    assert canonical_path("src/./new/") == "src/new"
    with pytest.raises(PolicyViolation) as caught:
        canonical_path("a/../../b")
    assert isinstance(caught.value, GateRefusal) and "escapes the workspace" in caught.value.reason


def test_writing_through_symlinks_never_touches_their_targets(root: Path) -> None:
    gate = gate_for(root)
    for path in ("twin/target.py", "alias/a.py", "b.py", "twin/created.py"):
        assert not apply_write(_Dir(root), path, "pwned\n", gate, NOTHING).allowed
    assert (root.parent / "ws-evil" / "target.py").read_text() == "outside\n"
    assert (root / "src" / "a.py").read_text() == "one\ntwo\nthree\n"
    assert not (root.parent / "ws-evil" / "created.py").exists()


def test_allow_globs_limit_the_scope(root: Path) -> None:
    gate = PatchGate(root, Scope(allow=["src/**"], deny=[]), Budget())
    assert gate.check_path("src/new.py").allowed
    refused = gate.check_path("README.md")
    assert not refused.allowed and "outside the task's scope (allowed: 'src/**')" in refused.reason
    # Allow rules match exactly: another spelling of an allowed directory is not allowed.
    assert not gate.check_path("SRC/new.py").allowed


def test_protected_paths_stay_denied_when_the_scope_omits_them(root: Path) -> None:
    gate = PatchGate(root, Scope(allow=["**"], deny=[]), Budget())
    for path in (".git/config", ".github/workflows/ci.yml", ".github/ai-fix.yml", ".GITHUB/WORKFLOWS/CI.YML"):
        assert not gate.check_path(path).allowed, path


def test_write_creates_parents_atomically_with_a_plain_mode(root: Path) -> None:
    decision = apply_write(_Dir(root), "pkg/sub/new.py", "x = 1\n", gate_for(root), NOTHING)
    assert decision.allowed and decision.path == "pkg/sub/new.py"
    target = root / "pkg" / "sub" / "new.py"
    assert target.read_text() == "x = 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert not [p for p in root.rglob(".ai-fix-*")]  # no temporary file left behind


def test_write_keeps_an_existing_files_mode(root: Path) -> None:
    assert apply_write(_Dir(root), "run.sh", "#!/bin/sh\necho bye\n", gate_for(root), NOTHING).allowed
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o755
    assert (root / "run.sh").read_text().endswith("bye\n")


def test_a_symlink_swapped_in_after_the_check_is_not_followed(root: Path) -> None:
    # The base reader runs after the path checks: it stands in for a process racing the gate.
    def swap(rel: str) -> bytes | None:
        (root / "pkg").rename(root / "pkg-old")
        os.symlink("../ws-evil", root / "pkg")
        return None

    (root / "pkg").mkdir()
    gate = PatchGate(root, Scope(), Budget(), base_reader=swap)
    decision = apply_write(_Dir(root), "pkg/target.py", "pwned\n", gate, NOTHING)
    assert not decision.allowed and "not written" in decision.reason
    assert (root.parent / "ws-evil" / "target.py").read_text() == "outside\n"


def test_apply_write_needs_the_gate_of_its_workspace(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(AiFixError, match="PatchGate"):
        apply_write(_Dir(other), "x.py", "x\n", gate_for(root), NOTHING)


def test_size_limit(root: Path) -> None:
    gate = gate_for(root, max_lines_changed=10**9)
    assert gate.check_write("big.txt", "x" * MAX_FILE_BYTES, NOTHING).allowed
    refused = apply_write(_Dir(root), "big.txt", "x" * (MAX_FILE_BYTES + 1), gate, NOTHING)
    assert not refused.allowed and "byte limit" in refused.reason
    assert not (root / "big.txt").exists()


@pytest.mark.parametrize("content", [b"\x00\x01\x02", b"PNG\x00\x00", b"\xff\xfe\xfa caf\xe9", "bad \udc80 surrogate"])
def test_binary_content_is_refused(root: Path, content: bytes | str) -> None:
    decision = apply_write(_Dir(root), "blob.dat", content, gate_for(root), NOTHING)
    assert not decision.allowed and ("binary" in decision.reason or "not valid text" in decision.reason)
    assert not (root / "blob.dat").exists()


def test_file_limit_counts_the_write_on_top_of_the_change_so_far(root: Path) -> None:
    gate = gate_for(root, max_files_changed=2)
    current = DiffStats(
        files=[FileChange(path="src/a.py", added=1, removed=0), FileChange(path="x.py", added=1, removed=0)]
    )
    refused = gate.check_write("third.py", "x\n", current)
    assert not refused.allowed and "3 files" in refused.reason and "max_files_changed" in refused.reason
    assert gate.check_write("x.py", "y\n", current).allowed  # already counted


def test_line_limit_counts_the_write_on_top_of_the_change_so_far(root: Path) -> None:
    gate = gate_for(root, max_lines_changed=5)
    current = DiffStats(files=[FileChange(path="x.py", added=3, removed=0)])
    assert gate.check_write("src/a.py", "one\ntwo\nTHREE\n", current).allowed  # 3 + 2
    refused = gate.check_write("src/a.py", "ONE\ntwo\nTHREE\n", current)  # 3 + 4
    assert not refused.allowed and "7 lines" in refused.reason


def test_a_base_reader_makes_rewrites_exact(root: Path) -> None:
    base = b"one\ntwo\nthree\n"
    gate = PatchGate(
        root, Scope(), Budget(max_lines_changed=2), base_reader=lambda rel: base if rel == "src/a.py" else None
    )
    (root / "src" / "a.py").write_text("one\nTWO\nthree\n")
    current = DiffStats(files=[FileChange(path="src/a.py", added=1, removed=1)])
    # Rewriting the same line again is still a 2-line change against the base, not 4.
    assert gate.check_write("src/a.py", "one\n2\nthree\n", current).allowed
    # Without the base reader the gate can only add the new edit to the old one.
    assert not gate_for(root, max_lines_changed=2).check_write("src/a.py", "one\n2\nthree\n", current).allowed


def _numstat(tmp_path: Path, old: bytes, new: bytes) -> tuple[int, int]:
    (tmp_path / "old").write_bytes(old)
    (tmp_path / "new").write_bytes(new)
    out = subprocess.run(
        ["git", "diff", "--no-index", "--numstat", "old", "new"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    if not out:
        return 0, 0
    added, removed, _ = out.split("\t", 2)
    return int(added), int(removed)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"a\nb\nc\n", b"a\nB\nc\n"),
        (b"a\nb\nc\n", b"a\nb\nc"),
        (b"", b"x\ny\n"),
        (b"a\nb\n", b""),
        (b"a\nb\nc\nd\n", b"d\na\nb\nc\n"),
        (b"same\n", b"same\n"),
    ],
)
def test_line_counts_match_git(tmp_path: Path, old: bytes, new: bytes) -> None:
    assert line_counts(old, new) == _numstat(tmp_path, old, new)


def test_violations_of_a_whole_change(root: Path) -> None:
    gate = gate_for(root, max_files_changed=5, max_lines_changed=50)
    (root / "link").symlink_to("src")
    stats = DiffStats(
        files=[
            FileChange(path="src/a.py", added=1, removed=1, old_mode="100644", new_mode="100644"),
            FileChange(path="tool.py", added=1, removed=0, status="A", new_mode="100755"),
            FileChange(path="vendor", added=0, removed=0, status="A", new_mode="160000"),
            FileChange(path="img.png", added=0, removed=0, status="A", new_mode="100644", binary=True),
            FileChange(path=".github/workflows/ci.yml", added=0, removed=9, status="D", old_mode="100644"),
            FileChange(path="link", added=1, removed=0, status="A", new_mode="120000"),
        ]
    )
    (root / "tool.py").write_text("x\n")
    (root / "img.png").write_bytes(b"\x89PNG")
    reasons = {d.path: d.reason for d in gate.violations(stats)}
    assert "src/a.py" not in reasons and "run.sh" not in reasons
    assert "executable" in reasons["tool.py"]
    assert "submodules" in reasons["vendor"]
    assert "binary" in reasons["img.png"]
    assert "protected" in reasons[".github/workflows/ci.yml"]
    assert "symbolic link" in reasons["link"]
    assert "6 files" in reasons[""]
    assert gate.violations(DiffStats(files=stats.files[:1])) == []
    # Keeping an already executable file executable is not a mode change.
    assert (
        gate.violations(
            DiffStats(files=[FileChange(path="run.sh", added=1, removed=1, old_mode="100755", new_mode="100755")])
        )
        == []
    )


# ---- generated paths -------------------------------------------------------------------------------

_PARTS = [
    "",
    ".",
    "..",
    "src",
    "a.py",
    "x",
    ".git",
    ".GIT",
    ".Git.",
    "git~1",
    ".github",
    ".GitHub",
    "workflows",
    "ai-fix.yml",
    "ci.yml",
    "migrations",
    "Migrations",
    "twin",
    "etc",
    "alias",
    "b.py",
    "ws-evil",
    "passwd",
    "target.py",
]
_TRAPS = ["twin", "etc", "alias", "b.py", ".git", ".GIT", ".github", ".GitHub", "migrations", "..", "/"]
_generated = st.one_of(
    st.tuples(st.sampled_from(_TRAPS), st.lists(st.sampled_from(_PARTS), max_size=3)).map(
        lambda t: "/".join([t[0], *t[1]])
    ),
    st.lists(st.sampled_from(_PARTS), min_size=1, max_size=6).map("/".join),
    st.lists(st.sampled_from(_PARTS), min_size=1, max_size=6).map(lambda parts: "/" + "/".join(parts)),
    st.text(alphabet=st.sampled_from("./\\\x00ab-~ gGiItT\u200c"), max_size=20),
    st.text(max_size=30),
)


def _denied(rel: str, scope: Scope) -> bool:
    return any(glob_match(rel, g, case_sensitive=False) for g in (*ALWAYS_DENIED, *scope.deny))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=_generated)
def test_no_generated_path_that_escapes_or_is_denied_is_allowed(root: Path, path: str) -> None:
    gate = gate_for(root)
    decision = gate.check_path(path)
    if not decision.allowed:
        assert decision.reason
        return
    rel = decision.path
    assert not path.startswith("/") and ".." not in path.split("/")
    assert Path(os.path.realpath(root / rel)).is_relative_to(root)
    assert not _denied(rel, gate.scope)
    assert ".git" not in [p.casefold().rstrip(". ") for p in rel.split("/")]
    walked = root
    for part in rel.split("/"):
        walked = walked / part
        assert not walked.is_symlink()


def test_unusable_paths_are_refused_not_raised(root: Path) -> None:
    gate = gate_for(root)
    assert "not valid text" in gate.check_path("bad\udc80.py").reason
    assert not gate.check_path("x" * 300 + "/a.py").allowed  # name too long for the filesystem
    big = DiffStats(files=[FileChange(path="huge.txt", added=1, removed=0, status="A", new_mode="100644")])
    (root / "huge.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    assert "byte limit" in gate.violations(big)[0].reason


def _outside_state(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for d in ("ws-evil", "outside") for p in (root.parent / d).rglob("*") if p.is_file()}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=_generated)
def test_no_generated_write_lands_outside_the_workspace(root: Path, path: str) -> None:
    before = _outside_state(root)
    decision = apply_write(_Dir(root), path, "pwned\n", gate_for(root), NOTHING)
    assert _outside_state(root) == before
    assert set(os.listdir(root.parent)) == {"ws", "ws-evil", "outside"}
    if decision.allowed:
        written = root / decision.path
        assert not written.is_symlink() and written.read_text() == "pwned\n"


@pytest.mark.parametrize("path", [".gitmodules", "vendor/lib/.gitmodules", ".gitattributes", "src/.GitAttributes"])
def test_repository_plumbing_is_protected_whatever_the_scope(root: Path, path: str) -> None:
    decision = PatchGate(root, Scope(allow=["**", path]), Budget()).check_path(path)
    assert not decision.allowed and "is protected" in decision.reason
    assert not path_in_scope(path, Scope(allow=["**", path]))


@pytest.mark.parametrize(
    "path",
    ["AGENTS.md", "pkg/AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".gitignore", "src/.GitIgnore"],
)
def test_agent_instruction_and_ignore_files_are_denied_unless_the_scope_names_them(root: Path, path: str) -> None:
    refused = gate_for(root).check_path(path)
    kind = "an ignore file" if path.lower().endswith(".gitignore") else "an agent instruction file"
    assert not refused.allowed and f"{path} is {kind}:" in refused.reason and f"['{path}']" in refused.reason
    assert not path_in_scope(path, Scope(allow=["**"])) and not path_in_scope(path, Scope(allow=["**/*.md", "**/.*"]))
    named = Scope(allow=["src/**", path])
    assert PatchGate(root, named, Budget()).check_path(path).allowed and path_in_scope(path, named)
    assert not PatchGate(root, Scope(allow=["**", "OTHER.md"]), Budget()).check_path(path).allowed


@pytest.mark.parametrize(
    "path",
    [".github/actions/setup/action.yml", ".github/actions/setup/run.sh", "tools/lint/action.yaml", "CODEOWNERS",
     ".github/CODEOWNERS", ".lfsconfig", ".github/dependabot.yml", ".circleci/config.yml", "Jenkinsfile"],
)  # fmt: skip
def test_what_the_projects_ci_runs_is_denied_unless_the_scope_names_it(root: Path, path: str) -> None:
    refused = gate_for(root).check_path(path)
    assert not refused.allowed and "is code or configuration the project's CI runs:" in refused.reason
    assert not path_in_scope(path, Scope(allow=["**"])) and not path_in_scope(path, Scope(allow=[".github/**"]))
    named = Scope(allow=["src/**", path])
    assert PatchGate(root, named, Budget()).check_path(path).allowed and path_in_scope(path, named)


def test_the_gate_knows_ci_code_in_the_spelling_a_case_insensitive_checkout_folds(root: Path) -> None:
    refused = gate_for(root).check_path(".GitHub/Actions./setup/run.sh")
    assert not refused.allowed and "the project's CI runs" in refused.reason
