"""Real projects as they come (`tests.support.corpus`): with no `.github/ai-fix.yml`, ai-fix's detected setup and its
baseline in bwrap reproduce each project's own green suite, every check it detects passing; a project with a lock
file gets the versions it locks.

The projects run two at a time (the machine's two cores), once per session; each test reports one project.
What each project shows of issue 34 is its `covers`; docs/repository-config.md lists what is covered and what is not.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.corpus import CORPUS, TEST_CHECKS, Project, Reproduced, reproduce
from tests.support.locks import FromLock
from tests.support.sandbox import skip_reason

pytestmark = pytest.mark.bwrap


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Reproduced]]:
    if skip_reason("bwrap"):
        pytest.skip(f"this machine cannot run bwrap: {skip_reason('bwrap')}")
    root = tmp_path_factory.mktemp("corpus")
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda p: reproduce(p, root / p.name), CORPUS))
    yield {r.project.name: r for r in done}


def test_the_corpus_is_real_projects_of_every_ecosystem_ai_fix_detects() -> None:
    assert len(CORPUS) >= 12
    assert {p.ecosystem for p in CORPUS} == {"python", "node", "go", "rust"}


@pytest.mark.parametrize("project", CORPUS, ids=[p.name for p in CORPUS])
def test_the_project_s_own_suite_is_green_in_the_baseline(
    project: Project, reproduced: dict[str, Reproduced], tmp_path: Path
) -> None:
    done = reproduced[project.name]
    contract = done.contract
    assert contract.setup_origin == "detected" and contract.setup, "no .github/ai-fix.yml: the setup was detected"
    assert len(contract.setup_sources) == len(contract.setup) and all(contract.setup_sources)
    assert all(c.origin == "detected" and c.source for c in contract.checks), "each check says where it came from"
    assert done.setup.status == "ran", done.setup.describe() + "\n" + done.setup.last_lines
    results = {r.name: r for r in done.baseline.results}
    assert any(name in TEST_CHECKS for name in results), f"no test check detected: {sorted(results)}"
    failing = {n: f"{r.status} {r.reason}\n{r.output[-3000:]}" for n, r in results.items() if r.status != "pass"}
    assert not failing, failing


LOCKED = [p for p in CORPUS if p.lock]


@pytest.mark.parametrize("project", LOCKED, ids=[p.name for p in LOCKED])
def test_a_lock_file_s_versions_are_the_ones_installed_not_the_newest(
    project: Project, reproduced: dict[str, Reproduced]
) -> None:
    done = reproduced[project.name]
    assert done.setup.status == "ran", done.setup.describe() + "\n" + done.setup.last_lines
    got = FromLock.read(done.workspace, project.lock)
    assert got.installed == {name: got.locked[name] for name in got.installed}, "each package at its locked version"
    assert not got.missing(), "what the tests need is installed from the lock"
    # Older than what pip installs for the same requirements today, as ai-fix did before it read the lock.
    assert got.older(), "the lock pins versions older than the newest its ranges allow, and those are installed"
