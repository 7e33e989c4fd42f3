"""`ai-fix contract` and `ai-fix init` as a user runs them: the installed command in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bot.contract.config import parse_config
from tests.support.repos import commit, make_repo

AI_FIX = str(Path(sys.executable).parent / "ai-fix")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AI_FIX, *args], capture_output=True, text=True, timeout=60, check=False)


def test_contract_prints_json_and_exits_0_ready_or_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"pyproject.toml": "[tool.pytest.ini_options]\n", "tests/test_a.py": ""})
    issue = tmp_path / "issue.md"
    issue.write_text("# Empty input crashes\n\n```\nTraceback (most recent call last):\nIndexError: x\n```\n")
    ready = run("contract", "--repo", str(repo), "--issue", str(issue))
    assert ready.returncode == 0, ready.stderr
    data = json.loads(ready.stdout)
    assert data["status"] == "ready"
    assert data["checks"] == [
        {
            "name": "pytest",
            "run": "python -m pytest -q",
            "timeout": 600,
            "origin": "detected",
            "source": "pyproject.toml [tool.pytest]",
            "run_tests": None,
        }
    ]
    issue.write_text("# Make it nicer\n")
    vague = run("contract", "--repo", str(repo), "--issue", str(issue))
    assert vague.returncode == 0 and json.loads(vague.stdout)["status"] == "needs_clarification"


def test_contract_shows_where_each_detected_setup_command_and_check_came_from(tmp_path: Path) -> None:
    tox = "[testenv]\nextras = testing\ncommands = pytest {posargs:tests}\n"
    pyproject = "[project]\nname = 'x'\n[project.optional-dependencies]\ntesting = ['pytest']\n[tool.ruff]\n"
    hooks = (
        "repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.11.9\n    hooks: [{id: ruff}]\n"
    )
    files = {"pyproject.toml": pyproject, "tox.ini": tox, ".pre-commit-config.yaml": hooks, "tests/test_a.py": ""}
    repo = make_repo(tmp_path / "repo", files)
    issue = tmp_path / "issue.md"
    issue.write_text("# Empty input crashes\n\n## Acceptance criteria\n- `parse('')` returns `[]`\n")
    data = json.loads(run("contract", "--repo", str(repo), "--issue", str(issue)).stdout)
    assert [(c["name"], c["run"], c["source"]) for c in data["checks"]] == [
        ("pytest", "python -m pytest tests", "tox.ini [testenv] commands"),
        ("ruff", "ruff check --no-fix .", "pyproject.toml [tool.ruff]"),
    ]
    assert len(data["setup_sources"]) == len(data["setup"]) == 3
    assert data["setup_sources"][0] == "ai-fix: the project's own environment"
    assert "the extras for tests" in data["setup_sources"][1] and "tox.ini [testenv] extras" in data["setup_sources"][1]
    assert data["setup"][2].startswith(".ai-fix-env/venv/bin/python -m pip install ruff==0.11.9 ")
    assert data["setup_sources"][2] == "the ruff check, pinned by the project to 0.11.9"


def test_contract_exits_2_on_usage_and_config_errors(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".github/ai-fix.yml": "sandbox:\n  network: full\n"})
    issue = tmp_path / "issue.md"
    issue.write_text("# T\n")
    broken = run("contract", "--repo", str(repo), "--issue", str(issue))
    assert broken.returncode == 2 and broken.stdout == ""
    assert (
        "ai-fix contract: .github/ai-fix.yml line 2: sandbox.network: must be one of 'none' or 'setup'" in broken.stderr
    )
    missing = run("contract", "--repo", str(repo), "--issue", str(tmp_path / "nope.md"))
    assert missing.returncode == 2 and "cannot read the issue file" in missing.stderr
    not_repo = run("contract", "--repo", str(tmp_path), "--issue", str(issue))
    assert not_repo.returncode == 2 and "is not a git repository" in not_repo.stderr
    usage = run("contract", "--repo", str(repo))
    assert usage.returncode == 2 and "--issue" in usage.stderr


def test_init_writes_config_and_form_then_contract_uses_them(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"go.mod": "module example.com/x\n", "Makefile": "test:\n\tgo test\n"})
    first = run("init", str(repo))
    assert first.returncode == 0, first.stderr
    assert "checks detected: go-test (go test ./...)" in first.stdout
    config = parse_config((repo / ".github/ai-fix.yml").read_text())
    assert [c.name for c in config.checks] == ["go-test"]
    assert config.sandbox.image is None, "an init'ed repository takes the operator's AIFIX_SANDBOX_IMAGE"
    assert (repo / ".github/ISSUE_TEMPLATE/ai-fix.yml").is_file()
    (repo / ".github/ai-fix.yml").write_text("# edited by hand\n")
    again = run("init", str(repo))
    assert again.returncode == 0 and "exists, left unchanged" in again.stdout
    assert (repo / ".github/ai-fix.yml").read_text() == "# edited by hand\n"
    commit(repo, {".github/ai-fix.yml": "checks:\n  - {name: unit, run: go test ./...}\n"})
    issue = tmp_path / "i.md"
    issue.write_text("# T\n## Acceptance criteria\n- ok\n")
    data = json.loads(run("contract", "--repo", str(repo), "--issue", str(issue)).stdout)
    assert [c["origin"] for c in data["checks"]] == ["config"]


def test_init_on_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    result = run("init", str(tmp_path / "nope"))
    assert result.returncode == 2 and "is not a directory" in result.stderr
