"""What the project's own CI runs to test: the `run:` steps of the jobs in `.github/workflows/` that test.

A person setting up a project looks at how its CI tests it. A job tests when its id or name says so
(`test`, `tests`, `pytest`, ...) or one of its steps runs a test command; each line of its `run:`
steps (continuations joined, `&&` chains split) is kept with where it came from. Lines that use a
workflow expression (`${{ matrix.python }}`) keep it: what it stands for is only known on GitHub, so a
reader of these lines takes from them what does not depend on it (the tox command, not its `-e`).
Pure: the files come through `Root`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import yaml

from bot.contract.root import Root

WORKFLOWS = ".github/workflows"
MAX_WORKFLOWS = 20
"""Enough workflow files for any project; a repository with more is read only that far."""
_TESTING = re.compile(r"\btests?\b|pytest|unittest|\bci\b|check", re.I)
_TEST_COMMAND = re.compile(
    r"(?:^|\s)(?:pytest|py\.test|tox|nox|npm (?:run )?test|yarn test|pnpm test|go test|cargo test|make test)\b"
    r"|-m (?:pytest|unittest|tox|nox)\b"
)
EXPRESSION = "${{"
NOT_TESTS = frozenset({"docs", "doc", "lint", "mypy", "typing", "type", "style", "pre-commit", "precommit", "build",
                       "release", "publish", "pyright", "docset", "changelog", "report"})  # fmt: skip
"""Factors of a tox environment that does something else than run the tests."""


@dataclass(frozen=True)
class RunLine:
    command: str
    source: str
    """e.g. `.github/workflows/ci.yml job tests step "Run tests"`."""


def _lines(script: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", script)
    out: list[str] = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out += [part.strip() for part in line.split(" && ") if part.strip()]
    return out


def _job_lines(file: str, job_id: str, job: dict[str, object]) -> list[RunLine]:
    steps = job.get("steps")
    if not isinstance(steps, list):
        return []
    found: list[RunLine] = []
    for i, step in enumerate(steps, 1):
        if not isinstance(step, dict) or not isinstance(script := step.get("run"), str):
            continue
        label = f'"{step["name"]}"' if isinstance(step.get("name"), str) else str(i)
        found += [RunLine(line, f"{file} job {job_id} step {label}") for line in _lines(script)]
    return found


def workflow_lines(root: Root) -> list[RunLine]:
    """The `run:` lines of the workflows' testing jobs, in file and step order."""
    files = sorted(p for p in root.files.list_dir(WORKFLOWS) if p.endswith((".yml", ".yaml")))[:MAX_WORKFLOWS]
    found: list[RunLine] = []
    for file in files:
        try:
            data = yaml.safe_load(root.files.read_text(file) or "")
        except yaml.YAMLError:
            continue
        jobs = data.get("jobs") if isinstance(data, dict) else None
        if not isinstance(jobs, dict):
            continue
        for job_id, job in jobs.items():
            if not isinstance(job, dict):
                continue
            lines = _job_lines(file, str(job_id), job)
            named = f"{job_id} {job.get('name', '')}"
            if _TESTING.search(named) or any(_TEST_COMMAND.search(line.command) for line in lines):
                found += lines
    return found


def words(command: str) -> list[str]:
    """A command line's words as the shell splits them ([] when it cannot be split)."""
    try:
        return shlex.split(command)
    except ValueError:
        return []


def tox_env_named(lines: list[RunLine]) -> tuple[str, str] | None:
    """(the test environment a `tox` line runs, "" when it names none or an expression; its source), for the first
    line that runs tests (not docs, linters or a release)."""
    for line in lines:
        w = words(line.command)
        if "tox" not in w or "install" in w[: w.index("tox")]:  # `pip install tox` installs it, runs nothing
            continue
        rest = w[w.index("tox") + 1 :]
        named = [rest[rest.index(f) + 1] for f in ("-e", "-f") if f in rest[:-1]]
        env = named[0].split(",")[0] if named else ""
        if EXPRESSION in env:
            return "", line.source
        if not NOT_TESTS & set(re.split(r"[-_]", env)):
            return env, line.source
    return None


def pip_installs(lines: list[RunLine]) -> list[tuple[list[str], str]]:
    """The arguments of each `pip install` line (`python -m pip install`, `uv pip install`) without an expression."""
    found: list[tuple[list[str], str]] = []
    for line in lines:
        w = words(line.command)
        for i in range(len(w) - 1):
            if w[i] == "pip" and w[i + 1] == "install" and EXPRESSION not in line.command:
                found.append((w[i + 2 :], line.source))
                break
    return found
