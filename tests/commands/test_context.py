"""`ai-fix context` as a user runs it: a subprocess on a real repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.commands.main", "context", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _split(stdout: str) -> tuple[dict, str]:
    decoder = json.JSONDecoder()
    report, end = decoder.raw_decode(stdout)
    return report, stdout[end:].lstrip("\n")


def test_prints_ranked_files_as_json_then_the_rendered_context(shop_repo: Path, tmp_path: Path) -> None:
    issue = tmp_path / "issue.md"
    issue.write_text("# Discount is wrong for big carts\n\n`apply_discount` divides by zero for 10 items.\n")
    done = _run("--repo", str(shop_repo), "--issue", str(issue), "--budget", "400", "--top", "3")
    assert done.returncode == 0, done.stderr
    report, rendered = _split(done.stdout)
    assert report["files"][0]["path"] == "shop/pricing.py"
    assert len(report["files"]) == 3
    # Each signal's share, so a user can see why a file ranks where it does.
    assert {"score", "lexical", "direct", "named", "graph", "tested"} <= set(report["files"][0])
    scores = [f["score"] for f in report["files"]]
    assert scores == sorted(scores, reverse=True)
    assert 0 < report["tokens"] <= 400
    assert rendered.startswith("### shop/pricing.py:")
    assert "def apply_discount" in rendered
    assert {"path", "start_line", "end_line", "blob", "last_commit_date", "reason"} <= set(report["slices"][0])


def test_a_missing_issue_file_is_a_clear_error(shop_repo: Path, tmp_path: Path) -> None:
    done = _run("--repo", str(shop_repo), "--issue", str(tmp_path / "nope.md"))
    assert done.returncode == 2
    assert "cannot read the issue file" in done.stderr


def test_an_issue_without_a_title_line_is_refused(shop_repo: Path, tmp_path: Path) -> None:
    issue = tmp_path / "issue.md"
    issue.write_text("no heading here\n")
    done = _run("--repo", str(shop_repo), "--issue", str(issue))
    assert done.returncode == 2
    assert "'# ' heading" in done.stderr
