"""A task from two source releases: downloaded from a loopback index, checked by sha256, cached, made a repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.eval.gitrepo import git, patched_paths
from bot.eval.pypi import SdistCache, build
from bot.eval.tasks import PypiRelease
from tests.support.eval_tasks import BASE_CODE, FIXED_TESTS, serve_index, sha256, task_row


def release(**changes: str) -> PypiRelease:
    return PypiRelease.model_validate({**task_row()["pypi"], **changes})


def test_the_base_release_becomes_a_repository_and_the_fix_is_split_into_tests_and_code(tmp_path: Path) -> None:
    with serve_index() as (index, simple), SdistCache(tmp_path / "cache", simple) as cache:
        made = build(release(), cache.fetch, tmp_path / "tally.git")
    assert patched_paths(made.test_patch) == ["tests/test_tally.py"]
    assert "+def test_tabs_and_newlines" in made.test_patch
    # The gold fix holds the code only: no changelog, PKG-INFO or egg-info.
    assert patched_paths(made.patch) == ["tally.py"] and "+    return text.split()" in made.patch
    log = git(["log", "--format=%s", "main"], cwd=made.repo).splitlines()
    assert log == ["tally 1.0.0 (the source release from the package index)"]
    assert git(["rev-parse", "main"], cwd=made.repo).strip() == made.base_sha
    tree = git(["ls-tree", "-r", "--name-only", "main"], cwd=made.repo).split()
    assert tree == ["CHANGES.md", "tally.py", "tests/test_tally.py"]
    assert git(["show", "main:tally.py"], cwd=made.repo) == BASE_CODE
    assert FIXED_TESTS.splitlines()[-1] not in git(["show", "main:tests/test_tally.py"], cwd=made.repo)
    assert index.served.count("/files/tally-1.0.0.tar.gz") == 1


def test_the_same_release_always_makes_the_same_commit(tmp_path: Path) -> None:
    with serve_index() as (_index, simple), SdistCache(tmp_path / "cache", simple) as cache:
        first = build(release(), cache.fetch, tmp_path / "a.git").base_sha
        assert build(release(), cache.fetch, tmp_path / "b.git").base_sha == first


def test_a_cached_release_is_checked_and_fetched_again_when_it_does_not_match(tmp_path: Path) -> None:
    with serve_index() as (index, simple), SdistCache(tmp_path / "cache", simple) as cache:
        path = cache.fetch("tally", "1.0.0", sha256("1.0.0"))
        assert cache.fetch("tally", "1.0.0", sha256("1.0.0")) == path and len(index.served) == 2
        path.write_bytes(b"tampered")
        assert cache.fetch("tally", "1.0.0", sha256("1.0.0")) == path and len(index.served) == 4
        assert path.read_bytes().startswith(b"\x1f\x8b")


def test_a_wrong_pin_or_version_is_refused_with_what_to_fix(tmp_path: Path) -> None:
    with serve_index() as (_index, simple), SdistCache(tmp_path / "cache", simple) as cache:
        with pytest.raises(ConfigError, match="the task pins 0{64}.*fix the task's pypi field"):
            cache.fetch("tally", "1.0.0", "0" * 64)
        with pytest.raises(ConfigError, match="lists no source release of tally 9.9"):
            cache.fetch("tally", "9.9", "0" * 64)
        with pytest.raises(ConfigError, match="could not list nothere"):
            cache.fetch("nothere", "1.0", "0" * 64)
    assert not list((tmp_path / "cache").rglob("*.sdist"))


def test_a_release_pair_that_adds_no_test_is_refused(tmp_path: Path) -> None:
    with serve_index() as (_index, simple), SdistCache(tmp_path / "cache", simple) as cache:
        same = release(fixed="1.0.0", fixed_sha256=sha256("1.0.0"))
        with pytest.raises(ConfigError, match="changes no test file against 1.0.0"):
            build(same, cache.fetch, tmp_path / "x.git")
