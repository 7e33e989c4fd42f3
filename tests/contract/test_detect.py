"""Check detection on small real repositories of several ecosystems, read from the default branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.detect import detect_checks
from bot.contract.files import LocalRepoFiles, WorkTreeFiles
from bot.errors import ConfigError
from tests.support.repos import commit, git, make_repo, write

ECOSYSTEMS = [
    pytest.param(
        {
            "pyproject.toml": "[project]\nname='x'\n[tool.pytest.ini_options]\n[tool.ruff]\n[tool.mypy]\nfiles = ['src']\n",
            "src/x.py": "",
        },
        [("pytest", "python -m pytest -q"), ("ruff", "ruff check --no-fix ."), ("mypy", "python -m mypy")],
        id="python pyproject: pytest, ruff, mypy with files",
    ),
    pytest.param(
        {
            "setup.py": "",
            "setup.cfg": "[flake8]\nmax-line-length=100\n[mypy]\n",
            "tests/test_a.py": "",
            "x/__init__.py": "",
        },
        [
            ("pytest", "python -m pytest -q"),
            ("flake8", "python -m flake8 --extend-exclude=.ai-fix-env,node_modules"),
            ("mypy", "python -m mypy x"),
        ],
        id="python setup.cfg: tests dir, flake8, mypy on the package",
    ),
    pytest.param(
        {"tests/__init__.py": "", "tests/test_calc.py": "import unittest\n\nclass T(unittest.TestCase): ...\n"},
        [("unittest", "python -m unittest discover -s tests -t . -v")],
        id="a tests package of unittest files and no pytest configuration",
    ),
    pytest.param(
        {"test/test_calc.py": "from unittest import TestCase\n"},
        [("unittest", "python -m unittest discover -s test -v")],
        id="a test folder, not a package",
    ),
    pytest.param(
        {"setup.py": "", "tests/test_calc.py": "import unittest\nimport pytest\n"},
        [("pytest", "python -m pytest -q")],
        id="tests that use pytest run under pytest",
    ),
    pytest.param(
        {"tox.ini": "[tox]\nenvlist = py311\n[testenv]\ncommands = unittest\n"},
        [("tox", "tox")],
        id="tox without pytest",
    ),
    pytest.param({"noxfile.py": "import nox\n"}, [("nox", "nox")], id="nox"),
    pytest.param(
        {"package.json": '{"scripts": {"test": "jest", "lint": "eslint ."}}', "yarn.lock": ""},
        [("npm-test", "yarn test"), ("npm-lint", "yarn run lint")],
        id="node with yarn",
    ),
    pytest.param(
        {"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'},
        [],
        id="npm's placeholder test script is not a check",
    ),
    pytest.param({"go.mod": "module example.com/x\n", "x_test.go": ""}, [("go-test", "go test ./...")], id="go"),
    pytest.param({"Cargo.toml": "[package]\nname='x'\n"}, [("cargo-test", "cargo test")], id="rust"),
    pytest.param(
        {"Makefile": "all:\n\tcc x.c\ntest: all\n\t./run-tests\n"}, [("make-test", "make test")], id="make only"
    ),
    pytest.param(
        {"Makefile": "test:\n\tpytest\n", "pytest.ini": "[pytest]\n"},
        [("pytest", "python -m pytest -q")],
        id="make test is not added when a language runner is found",
    ),
    pytest.param({"README.md": "hello"}, [], id="nothing to detect"),
]


@pytest.mark.parametrize(("files", "expected"), ECOSYSTEMS)
def test_detection_per_ecosystem(tmp_path: Path, files: dict[str, str], expected: list[tuple[str, str]]) -> None:
    checks = detect_checks(LocalRepoFiles(make_repo(tmp_path / "repo", files)))
    assert [(c.name, c.run) for c in checks] == expected
    assert all(c.origin == "detected" for c in checks)


def test_files_come_from_the_default_branch_never_the_checked_out_one(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x", "AGENTS.md": "main rules"})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"go.mod": "module x\n", "AGENTS.md": "feature rules"})
    write(repo, {"Cargo.toml": "[package]\n"})  # uncommitted work-tree file
    files = LocalRepoFiles(repo)
    assert files.ref == "main"
    assert files.read_text("AGENTS.md") == "main rules"
    assert files.read_text("go.mod") is None
    assert detect_checks(files) == []
    assert "go.mod" in {p for p in WorkTreeFiles(repo).list_dir()}  # init reads the work tree instead


def test_default_branch_follows_origin_head(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "up", {"README.md": "x"}, branch="trunk")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    git(clone, "checkout", "-q", "-b", "work")
    files = LocalRepoFiles(clone)
    assert files.ref == "origin/trunk"
    assert files.list_dir() == ["README.md"]


def test_listing_marks_directories(tmp_path: Path) -> None:
    files = LocalRepoFiles(make_repo(tmp_path / "r", {"src/a.py": "", "src/pkg/b.py": "", "x.txt": ""}))
    assert files.list_dir() == ["src/", "x.txt"]
    assert files.list_dir("src") == ["src/a.py", "src/pkg/"]
    assert files.read_text("src") is None


def test_not_a_repository_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a git repository"):
        LocalRepoFiles(tmp_path)


def test_ambiguous_default_branch_says_how_to_fix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a": ""}, branch="one")
    git(repo, "branch", "two")
    with pytest.raises(ConfigError, match="cannot tell the default branch.*one, two"):
        LocalRepoFiles(repo)


NOXFILE = """import nox


@nox.session(python=["3.11", "3.12"])
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test]", "pytest-xdist")
    session.install("-r", "tests/requirements.txt")
    session.run("pytest", "-n", "auto", "tests/unit", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check")
"""

WORKFLOW = """\
name: CI
on: [push]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: pipx run ruff check
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python: ["3.11", "3.12"]
    steps:
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python }}
      - name: Install
        run: |
          python -m pip install --upgrade pip
          pip install -e .[tests] pytest-randomly
      - name: Test
        run: >
          coverage run -m pytest tests
          --cov-report=xml --junitxml=junit.xml -p no:randomly
"""


def test_nox_s_test_session_gives_the_command_and_what_it_installs(tmp_path: Path) -> None:
    files = {"pyproject.toml": "[project]\nname='x'\n[project.optional-dependencies]\ntest=['pytest']\n",
             "noxfile.py": NOXFILE, "tests/requirements.txt": "hypothesis\n"}  # fmt: skip
    repo = make_repo(tmp_path / "repo", files)
    contract = build_contract(snapshot_from_markdown("# x\n\n- a\n", str(repo)), LocalRepoFiles(repo))
    [pytest_check] = contract.checks
    assert (pytest_check.run, pytest_check.source) == (
        "python -m pytest -n auto tests/unit",
        "noxfile.py session tests commands",
    )
    install = contract.setup[1].split(" > ", 1)[0]
    assert install == ".ai-fix-env/venv/bin/python -m pip install -e '.[test]' pytest-xdist -r tests/requirements.txt"
    assert "noxfile.py session tests deps" in contract.setup_sources[1]


def test_the_ci_s_test_step_wins_with_its_own_paths_and_without_coverage_and_junit(tmp_path: Path) -> None:
    files = {"pyproject.toml": "[project]\nname='x'\n[project.optional-dependencies]\ntests=['pytest']\n",
             "tox.ini": "[testenv]\ncommands = pytest other\n", ".github/workflows/ci.yml": WORKFLOW}  # fmt: skip
    repo = make_repo(tmp_path / "repo", files)
    contract = build_contract(snapshot_from_markdown("# x\n\n- a\n", str(repo)), LocalRepoFiles(repo))
    [check] = contract.checks
    assert check.run == "python -m pytest tests -p no:randomly"
    assert check.source == '.github/workflows/ci.yml job test step "Test"'
    install = contract.setup[1].split(" > ", 1)[0]
    assert install == ".ai-fix-env/venv/bin/python -m pip install -e '.[tests]' pytest-randomly"
    assert '.github/workflows/ci.yml job test step "Install"' in contract.setup_sources[1]


def test_a_config_section_is_read_only_when_it_is_the_tool_s_own(tmp_path: Path) -> None:
    setup_cfg = "[bumpversion]\ncurrent_version = 1.0\nfiles = setup.py\n[mypy]\nstrict = True\n"
    repo = make_repo(tmp_path / "repo", {"setup.py": "", "setup.cfg": setup_cfg, "pkg/__init__.py": ""})
    [mypy] = [c for c in detect_checks(LocalRepoFiles(repo)) if c.name == "mypy"]
    assert (mypy.run, mypy.source) == ("python -m mypy pkg", "setup.cfg [mypy], on the package")
