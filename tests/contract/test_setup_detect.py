"""Setup detection and the environment keys of `.github/ai-fix.yml`, on small real repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.config import parse_config
from bot.contract.files import LocalRepoFiles
from bot.contract.render import render_contract_comment
from bot.errors import ConfigError
from tests.support.repos import make_repo

VENV = (
    "mkdir -p .ai-fix-env && printf '*\\n' > .ai-fix-env/.gitignore && python3 -m venv --upgrade-deps .ai-fix-env/venv"
)
PIP = ".ai-fix-env/venv/bin/python -m pip install"
ISSUE = "# Crash on empty input\n\n## Acceptance criteria\n- `parse('')` returns `[]`\n"


def installs(setup: list[str]) -> list[str]:
    """The commands without what follows a pip install's output going to its log (the way without the project)."""
    return [command.split(" > .ai-fix-env/install.log", 1)[0] for command in setup]


def tool(name: str, check: str | None = None) -> str:
    return f"{PIP} {name} || echo 'ai-fix: {name} could not be installed; the {check or name} check will not run'"


CASES = [
    pytest.param(
        {
            "pyproject.toml": (
                "[project]\nname = 'shop'\n[project.optional-dependencies]\ndev = ['black']\n"
                "tests = ['pytest>=8', 'shop[typing]']\ntyping = ['mypy']\n[tool.ruff]\n[tool.mypy]\n"
            ),
            "tests/test_a.py": "",
        },
        [VENV, f"{PIP} -e '.[tests]'", tool("ruff")],
        id="pyproject: the tests extra wins over dev; what it brings (through its own extras too) is not installed again",
    ),
    pytest.param(
        {"setup.py": "", "setup.cfg": "[options.extras_require]\ntest =\n    pytest\n[flake8]\n", "tests/t.py": ""},
        [VENV, f"{PIP} -e '.[test]'", tool("flake8")],
        id="setup.cfg extras_require",
    ),
    pytest.param(
        {
            "requirements.txt": "requests\n",
            "requirements-dev.txt": "-r requirements.txt\npytest==8.0\n",
            "tests/t.py": "",
        },
        [VENV, f"{PIP} -r requirements-dev.txt -r requirements.txt"],
        id="requirement files when there is nothing to install",
    ),
    pytest.param(
        {"pyproject.toml": "[tool.black]\nline-length = 100\n", "tests/test_a.py": ""},
        [],
        id="a pyproject.toml that only configures tools is not a project to install",
    ),
    pytest.param(
        {"pyproject.toml": "[project]\nname = 'x'\n", "tests/test_a.py": ""},
        [VENV, f"{PIP} -e .", tool("pytest")],
        id="no test extra: the project, then the test runner",
    ),
    pytest.param(
        {
            "pyproject.toml": "[project]\nname = 'x'\n[project.optional-dependencies]\ntests = ['pytest']\n",
            "tests/test_a.py": "",
            ".github/workflows/ci.yml": (
                "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
                "      - run: python -Im pip install tox tox-uv tox-gh-actions 'coverage[toml]'\n"
                "      - run: tox run -e py\n"
            ),
        },
        [VENV, f"{PIP} -e '.[tests]' 'coverage[toml]'"],
        id="the CI's tox and its plugins run tox, not the tests: they are not installed (structlog's ci.yml)",
    ),
    pytest.param({"package.json": "{}", "package-lock.json": "{}"}, ["npm ci"], id="npm lock file"),
    pytest.param({"package.json": "{}", "pnpm-lock.yaml": ""}, ["pnpm install --frozen-lockfile"], id="pnpm"),
    pytest.param({"package.json": "{}", "yarn.lock": ""}, ["yarn install --immutable"], id="yarn"),
    pytest.param({"package.json": "{}"}, ["npm install"], id="no lock file"),
    pytest.param({"go.mod": "module x\n", "go.sum": ""}, ["go mod download"], id="go"),
    pytest.param({"Cargo.toml": "[package]\nname='x'\n"}, ["cargo fetch"], id="rust"),
    pytest.param({"README.md": "hello"}, [], id="nothing to set up"),
]


@pytest.mark.parametrize(("files", "expected"), CASES)
def test_setup_is_detected_from_the_repositorys_files(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    repo = make_repo(tmp_path / "repo", files)
    contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
    assert installs(contract.setup) == expected
    assert contract.setup_origin == "detected" and len(contract.setup_sources) == len(expected)
    if expected:
        assert contract.sandbox.network == "setup", "detected setup installs: it gets the setup phase's network"
        assert contract.provenance.sources["setup"].startswith("detected in main@")
    else:
        assert contract.sandbox.network == "none" and "setup" not in contract.provenance.sources


def test_the_configs_setup_wins_and_an_empty_one_opts_out(tmp_path: Path) -> None:
    files = {"pyproject.toml": "[project]\nname = 'x'\n", "tests/t.py": ""}
    for config, setup, origin in (
        ("setup: [make deps]\n", ["make deps"], "config"),
        ("setup: []\n", [], "config"),
        ("checks:\n  - name: t\n    run: make test\n", [VENV, f"{PIP} -e ."], "detected"),
    ):
        repo = make_repo(tmp_path / origin / str(len(setup)), {**files, ".github/ai-fix.yml": config})
        contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
        assert (installs(contract.setup), contract.setup_origin) == (setup, origin), config


def test_a_network_the_config_sets_is_kept_for_detected_setup(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"package.json": "{}", "package-lock.json": "{}", ".github/ai-fix.yml": "sandbox:\n  network: none\n"},
    )
    contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
    assert contract.setup == ["npm ci"] and contract.sandbox.network == "none"


def test_environment_keys_parse_and_their_errors_name_the_line() -> None:
    config = parse_config(
        "setup_secrets: [INDEX_TOKEN, NPM_TOKEN]\nsandbox:\n  pull: never\n  setup_inputs: ['deps/*.lock']\n"
    )
    assert config.setup_secrets == ["INDEX_TOKEN", "NPM_TOKEN"]
    assert (config.sandbox.pull, config.sandbox.setup_inputs) == ("never", ["deps/*.lock"])
    for text, expected in (
        ("sandbox:\n  pull: sometimes\n", "line 2: sandbox.pull: must be one of 'missing', 'always' or 'never'"),
        ("setup_secrets: [index-token]\n", "line 1: setup_secrets: secret names are upper-case letters"),
        ("sandbox:\n  setup_inputs: ['']\n", "line 2: sandbox.setup_inputs: globs must be non-empty strings"),
    ):
        with pytest.raises(ConfigError) as err:
            parse_config(text)
        assert expected in str(err.value), str(err.value)


def test_the_contract_comment_says_the_setup_was_detected_and_names_the_secrets_not_their_values(
    tmp_path: Path,
) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"package.json": "{}", "yarn.lock": "", ".github/ai-fix.yml": "setup_secrets: [NPM_TOKEN]\n"},
    )
    contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
    comment = render_contract_comment(contract)
    assert (
        "**Setup** (detected; `setup:` in `.github/ai-fix.yml` replaces it) (network: setup; setup secrets: "
        "`NPM_TOKEN`):\n\n- `yarn install --immutable` ← yarn.lock"
    ) in comment


def test_a_configured_checks_tool_is_installed_by_the_guess(tmp_path: Path) -> None:
    config = "checks:\n  - name: tests\n    run: env PYTEST_ADDOPTS= python -m pytest -q tests\n"
    repo = make_repo(tmp_path / "repo", {"setup.py": "", "tests/t.py": "", ".github/ai-fix.yml": config})
    contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
    assert installs(contract.setup) == [VENV, f"{PIP} -e .", tool("pytest", "tests")]


@pytest.mark.parametrize(
    ("files", "where"),
    [
        pytest.param({"setup.py": "", "calc.py": ""}, '"$PWD"', id="flat layout: the repository root"),
        pytest.param({"pyproject.toml": "[project]\nname = 'x'\n", "src/x/__init__.py": ""}, '"$PWD/src"', id="src"),
    ],
)
def test_without_network_the_guess_downloads_nothing(tmp_path: Path, files: dict[str, str], where: str) -> None:
    config = "checks:\n  - name: tests\n    run: python -m pytest -q\nsandbox:\n  network: none\n"
    repo = make_repo(tmp_path / "repo", {**files, ".github/ai-fix.yml": config})
    contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
    assert contract.sandbox.network == "none" and contract.setup_origin == "detected"
    make, outer, install = contract.setup
    assert "python3 -m venv --without-pip .ai-fix-env/venv" in make
    assert "site.getsitepackages()" in outer and "zz-ai-fix-outer.pth" in outer
    assert f"{PIP} --no-build-isolation --no-deps --no-index -e ." in install
    assert f'echo {where} > "$1/ai-fix-source.pth"' in install
    assert not [c for c in contract.setup if "pip install pytest" in c or "-r requirements" in c]


def test_without_network_requirement_files_alone_are_not_guessed(tmp_path: Path) -> None:
    config = "sandbox:\n  network: none\n"
    repo = make_repo(tmp_path / "repo", {"requirements.txt": "requests\n", ".github/ai-fix.yml": config})
    contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
    assert contract.setup == []


def test_the_contract_comment_shows_a_detected_install_as_a_person_reads_it_with_its_source(tmp_path: Path) -> None:
    files = {"pyproject.toml": "[project]\nname = 'x'\n[project.optional-dependencies]\ntest = ['pytest']\n"}
    repo = make_repo(tmp_path / "repo", {**files, "tests/test_a.py": ""})
    comment = render_contract_comment(build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo)))
    assert (
        f"- `{PIP} -e '.[test]'` (when pip cannot install the project: its dependencies, and its source first on the "
        "import path) ← the project's manifest, the extras for tests"
    ) in comment
    assert "install.log" not in comment
