"""The paths of a task's diffs are the ones git reads, and none outside the repository is taken."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.eval.gitrepo import inside, patched_paths

RENAME = """diff --git a/old_name.py b/tests/new_name.py
similarity index 90%
rename from old_name.py
rename to tests/new_name.py
--- a/old_name.py
+++ b/tests/new_name.py
@@ -1,2 +1,2 @@
 x = 1
-y = 2
+y = 3
"""
LOOKALIKE = """diff --git a/notes.txt b/notes.txt
--- a/notes.txt
+++ b/notes.txt
@@ -1,2 +1,2 @@
--- a/../../etc/passwd
+++ b/../../home/user/.ssh/id_rsa
 same
"""


def test_renames_give_both_names_and_hunk_lines_are_content() -> None:
    assert patched_paths(RENAME) == ["tests/new_name.py", "old_name.py"]
    assert patched_paths(LOOKALIKE) == ["notes.txt"]
    assert patched_paths("") == []


@pytest.mark.parametrize(
    ("header", "shown"),
    [
        ("a/../../etc/passwd", "../../etc/passwd"),
        ("a/.git/config", ".git/config"),
        ("a/src/.GIT/hooks/x", "src/.GIT/hooks/x"),
    ],
)
def test_a_path_outside_the_repository_files_is_refused(header: str, shown: str) -> None:
    patch = f"--- {header}\n+++ b/{header[2:]}\n@@ -1 +1 @@\n-a\n+b\n"
    with pytest.raises(ValueError, match=f"it touches '{shown}', outside the repository's files: refusing the task"):
        patched_paths(patch)


def test_text_git_cannot_read_as_a_diff_is_refused() -> None:
    with pytest.raises(ValueError, match="git cannot read it as a diff"):
        patched_paths("--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-only one line\n")


def test_a_path_through_a_symbolic_link_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "out").symlink_to(tmp_path)
    assert inside(tree, "src/a.py") == tree / "src/a.py"
    with pytest.raises(ConfigError, match="out/secret leads outside the task's repository"):
        inside(tree, "out/secret")
