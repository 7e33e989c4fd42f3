"""Each detector on the real files of the corpus's projects (`tests.support.corpus`): PyPI source releases pinned by
sha256, made git repositories, read from their default branch as a job reads them. No sandbox runs here."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.files import LocalRepoFiles
from bot.contract.models import TaskContract
from bot.contract.pydeps import pinned
from bot.contract.pysetup import readable
from bot.contract.root import Root
from bot.contract.testenv import nox_env, tox_env, tox_env_running
from bot.contract.workflows import pip_installs, tox_env_named, workflow_lines
from tests.support.corpus import CORPUS, ISSUE, make_repo

BY_NAME = {p.name: p for p in CORPUS}


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("corpus")
    made = {p.name: make_repo(p, root) for p in CORPUS if p.ecosystem == "python"}
    # As the source releases come: no lock file, the Poetry and PDM groups installed with pip.
    return made | {f"{p.name} (no lock)": make_repo(p, root / "unlocked", locked=False) for p in CORPUS if p.lock}


def locked(repo: Path, lock: str, name: str) -> str:
    [version] = [p["version"] for p in tomllib.loads((repo / lock).read_text())["package"] if p["name"] == name]
    return str(version)


def contract(repo: Path) -> TaskContract:
    return build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))


def setup_of(repo: Path) -> list[tuple[str, str]]:
    c = contract(repo)
    return [(readable(cmd), src) for cmd, src in zip(c.setup, c.setup_sources, strict=True)]


def test_tox_s_test_environment_and_its_factors(repos: dict[str, Path]) -> None:
    pluggy = tox_env(Root(LocalRepoFiles(repos["pluggy"])))
    assert pluggy is not None and pluggy.source == "tox.ini [testenv]"
    assert (pluggy.extras, pluggy.commands) == (("testing",), ("pytest",)), "{env:_PLUGGY_TOX_CMD:pytest} {posargs}"
    structlog = tox_env(Root(LocalRepoFiles(repos["structlog"])))
    assert structlog is not None and structlog.groups == ("tests",) and structlog.commands == ("pytest",)
    dateutil = tox_env(Root(LocalRepoFiles(repos["python-dateutil"])))
    assert dateutil is not None and dateutil.commands == (
        'python -m pytest  "./tests" "./docs" --cov-config="./tox.ini" --cov=dateutil',
    ), "a nested substitution in {posargs: ...}"
    blinker = tox_env(Root(LocalRepoFiles(repos["blinker"])))
    assert blinker is not None and blinker.deps == ("-r requirements/tests.txt",)


def test_the_tox_environment_that_runs_mypy_and_what_it_installs(repos: dict[str, Path]) -> None:
    typing = tox_env_running(Root(LocalRepoFiles(repos["itsdangerous"])), "mypy")
    assert typing is not None and typing.source == "tox.ini [testenv:typing]"
    assert typing.deps == ("-r requirements/typing.txt",) and typing.commands[0] == "mypy"
    structlog = tox_env_running(Root(LocalRepoFiles(repos["structlog"])), "mypy")
    assert structlog is not None and (structlog.groups, structlog.commands) == (("typing",), ("mypy src",))
    assert nox_env(Root(LocalRepoFiles(repos["pluggy"]))) is None


def test_the_ci_workflow_s_testing_steps(repos: dict[str, Path]) -> None:
    lines = workflow_lines(Root(LocalRepoFiles(repos["python-dateutil"])))
    assert ("-U", "tox", "six") in [tuple(args) for args, _ in pip_installs(lines)]
    [source] = [s for args, s in pip_installs(lines) if "six" in args]
    assert source == '.github/workflows/validate.yml job test step "Install dependencies"'
    assert tox_env_named(lines) == ("py", '.github/workflows/publish.yml job deploy step "Create tox environments"'), (
        "`pip install -U tox` installs tox, it does not run it; `tox -p -e py,build,release --notest` runs `py` first"
    )
    humanize = workflow_lines(Root(LocalRepoFiles(repos["humanize"])))
    assert tox_env_named(humanize) == ("py", '.github/workflows/test.yml job test step "Tox tests"'), (
        "the docs and lint jobs' tox environments are not the tests'"
    )


def test_pins_from_pre_commit_and_lock_files(repos: dict[str, Path]) -> None:
    pluggy = Root(LocalRepoFiles(repos["pluggy"]))
    assert (pinned(pluggy, "ruff", []), pinned(pluggy, "mypy", [])) == ("0.11.9", "1.15.0")
    click = Root(LocalRepoFiles(repos["click"]))
    assert pinned(click, "ruff", []) is not None, "uv.lock's entry"
    assert pinned(Root(LocalRepoFiles(repos["tomlkit"])), "mypy", []) == locked(repos["tomlkit"], "poetry.lock", "mypy")
    assert pinned(Root(LocalRepoFiles(repos["unearth"])), "pytest", []) == locked(
        repos["unearth"], "pdm.lock", "pytest"
    )
    assert pinned(Root(LocalRepoFiles(repos["idna"])), "flake8", ["flake8==7.1.1"]) == "7.1.1"


@pytest.mark.parametrize(
    ("name", "install", "sources"),
    [
        ("pluggy", "-e '.[testing]' coverage", ["tox.ini [testenv] extras"]),
        ("structlog", "-e . 'freezegun>=0.2.8' pretend", ["pyproject.toml [dependency-groups] tests"]),
        ("python-dateutil", "-e . six -r requirements-dev.txt", ["requirements-dev.txt"]),
        ("platformdirs", "-e '.[test]'", ["the extras for tests", "pyproject.toml [tool.hatch.envs.test]"]),
        ("blinker", "-e . -r requirements/tests.txt", ["tox.ini [testenv] deps"]),
        ("unearth (no lock)", "-e .", ["pyproject.toml [tool.pdm.dev-dependencies] test"]),
        (
            "tomlkit (no lock)",
            "-e . 'pytest>=7.2.0,<8' 'pytest-cov>=4.0.0,<5'",
            ["pyproject.toml [tool.poetry.group.dev.dependencies]"],
        ),
    ],
)
def test_the_install_gathers_the_test_dependencies_from_their_sources(
    repos: dict[str, Path], name: str, install: str, sources: list[str]
) -> None:
    [_venv, (command, source), *_tools] = setup_of(repos[name])
    assert command.startswith(f".ai-fix-env/venv/bin/python -m pip install {install}"), command
    assert all(s in source for s in sources), source


def test_a_uv_lock_is_synced_frozen_with_the_test_group(repos: dict[str, Path]) -> None:
    setup = setup_of(repos["click"])
    assert setup[1] == (".ai-fix-env/venv/bin/python -m pip install uv", "uv.lock")
    assert setup[2][0].endswith(".ai-fix-env/venv/bin/uv sync --frozen --inexact --group=tests")
    assert setup[2][1].startswith("uv.lock, ")


def test_a_poetry_lock_is_installed_by_the_poetry_that_wrote_it_with_the_test_group(repos: dict[str, Path]) -> None:
    [_venv, tool, install, *_tools] = setup_of(repos["tomlkit"])
    writer = (repos["tomlkit"] / "poetry.lock").read_text().split("@generated by Poetry ", 1)[1].split()[0]
    assert tool[0].startswith(
        "poetry --version > /dev/null 2>&1 || { python3 -m venv --upgrade-deps .ai-fix-env/poetry"
    )
    assert f"pip install poetry=={writer} ||" in tool[0], "the Poetry that wrote the lock, else the newest"
    assert tool[1] == f"poetry.lock, written by Poetry {writer}"
    assert install[0].startswith('PATH="$PATH:$PWD/.ai-fix-env/poetry/bin" VIRTUAL_ENV="$PWD/.ai-fix-env/venv" ')
    assert install[0].endswith(" poetry install --no-interaction --with=dev"), install[0]
    assert install[1] == "poetry.lock, pyproject.toml [tool.poetry.group.dev.dependencies]"


def test_a_pdm_lock_is_synced_with_the_test_group_it_holds(repos: dict[str, Path]) -> None:
    [_venv, tool, sync, *_tools] = setup_of(repos["unearth"])
    assert 'groups = ["default", "doc", "test"]' in (repos["unearth"] / "pdm.lock").read_text()
    assert tool == (
        "pdm --version > /dev/null 2>&1 || { python3 -m venv --upgrade-deps .ai-fix-env/pdm && "
        ".ai-fix-env/pdm/bin/python -m pip install 'pdm[locked]'; }",
        "pdm.lock",
    )
    assert sync == (
        'PATH="$PATH:$PWD/.ai-fix-env/pdm/bin" PDM_PYTHON="$PWD/.ai-fix-env/venv/bin/python" PDM_CHECK_UPDATE=false '
        "pdm sync --group=test",
        "pdm.lock, pyproject.toml [tool.pdm.dev-dependencies] test",
    ), "the test group only, not the docs'"


@pytest.mark.parametrize(
    ("name", "checks"),
    [
        ("pluggy", [("pytest", "python -m pytest", "tox.ini [testenv] commands"),
                    ("ruff", "ruff check --no-fix .", "pyproject.toml [tool.ruff]"),
                    ("mypy", "python -m mypy src/pluggy", "pyproject.toml [tool.mypy], on the package")]),
        ("structlog", [("pytest", "python -m pytest", "tox.ini [testenv] commands"),
                       ("ruff", "ruff check --no-fix .", "pyproject.toml [tool.ruff]"),
                       ("mypy", "python -m mypy src", "tox.ini [testenv:mypy-pkg] commands")]),
        ("python-dateutil", [("pytest", "python -m pytest ./tests ./docs", "tox.ini [testenv] commands")]),
        ("toolz", [("pytest", "python -m pytest -q", "test_*.py files in toolz/tests/")]),
        ("cachetools", [("pytest", "python -m pytest --basetemp=/tmp/tox-env-tmp", "tox.ini [testenv] commands"),
                        ("flake8", "python -m flake8 --extend-exclude=.ai-fix-env,node_modules", "setup.cfg [flake8]")]),
    ],
)  # fmt: skip
def test_checks_as_the_project_runs_them_with_their_source(
    repos: dict[str, Path], name: str, checks: list[tuple[str, str, str]]
) -> None:
    assert [(c.name, c.run, c.source) for c in contract(repos[name]).checks] == checks
