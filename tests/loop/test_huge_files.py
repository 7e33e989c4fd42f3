"""Item 2 of issue 13: a file far larger than memory should hold (committed, or written by a check) is never
read whole by `view`, `search_code` or an edit; each reads a bounded part and says what it left out."""

from __future__ import annotations

from pathlib import Path

from bot.loop.editor import MAX_VIEW_LINES, MAX_VIEW_SCAN, edit
from bot.loop.records import EditInput
from bot.loop.search import search_code
from bot.workspace.models import DiffStats
from tests.support.repos import FolderTree, huge_file, peak_bytes

HEAD = "".join(f"row {n} needle\n" for n in range(1, 2001))
BOUND = MAX_VIEW_SCAN + (8 << 20)
"""The most memory one read may take: the scan limit and room for the lines kept (the file is 256 MiB)."""


def view(tree: FolderTree, **cmd: object) -> tuple[bool, str, int]:
    observation, peak = peak_bytes(lambda: edit(tree, tree.gate, EditInput(command="view", **cmd), DiffStats()))  # type: ignore[arg-type]
    return observation.ok, observation.text, peak


def test_viewing_the_first_lines_of_a_huge_file_reads_only_them(tmp_path: Path) -> None:
    huge_file(tmp_path / "dump.log", HEAD)
    ok, text, peak = view(FolderTree(tmp_path), path="dump.log", view_range=[1, 5])
    assert ok and text.splitlines() == [f"{n:6d}\trow {n} needle" for n in range(1, 6)]
    assert peak < 1 << 20, f"{peak} bytes held to show 5 lines"


def test_a_whole_view_of_a_huge_file_stops_at_the_scan_limit_and_says_so(tmp_path: Path) -> None:
    huge_file(tmp_path / "dump.log", HEAD)
    ok, text, peak = view(FolderTree(tmp_path), path="dump.log")
    lines = text.splitlines()
    assert ok and len(lines) == MAX_VIEW_LINES + 1 and lines[0] == "     1\trow 1 needle"
    assert "goes on past 16 MiB" in lines[-1] and "view_range" in lines[-1]
    assert peak < BOUND, f"{peak} bytes held for one view"


def test_a_range_past_the_scan_limit_is_refused_with_a_note_not_read(tmp_path: Path) -> None:
    huge_file(tmp_path / "dump.log", HEAD)
    ok, text, peak = view(FolderTree(tmp_path), path="dump.log", view_range=[9_000_000, 9_000_005])
    assert ok and "goes on past 16 MiB" in text and peak < BOUND


def test_long_lines_are_cut_and_binary_files_refused(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("x" * 100_000 + "\nsecond\n")
    ok, text, _ = view(FolderTree(tmp_path), path="min.js")
    first, second = text.splitlines()
    assert ok and first.endswith("[... line cut]") and len(first) < 2100 and second == "     2\tsecond"
    huge_file(tmp_path / "disk.img", "")
    ok, text, peak = view(FolderTree(tmp_path), path="disk.img")
    assert not ok and "binary file" in text and peak < 1 << 20


def test_search_skips_a_huge_file_and_names_it(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("needle = 1\n")
    huge_file(tmp_path / "data" / "dump.log", HEAD)
    found, peak = peak_bytes(lambda: search_code(tmp_path, "needle"))
    assert found.splitlines()[0] == "app.py:1: needle = 1"
    assert "not searched, over 4 MiB: data/dump.log" in found and peak < 1 << 20


def test_an_edit_of_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    huge_file(tmp_path / "dump.log", HEAD)
    tree = FolderTree(tmp_path)
    cmd = EditInput(command="str_replace", path="dump.log", old_str="row 1 needle", new_str="row one")
    observation, peak = peak_bytes(lambda: edit(tree, tree.gate, cmd, DiffStats()))
    assert not observation.ok and "over the 1048576-byte limit for one file" in observation.text
    assert peak < 1 << 20 and (tmp_path / "dump.log").stat().st_size == 256 << 20
