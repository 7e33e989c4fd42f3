"""The task rows of an eval: SWE-bench's format (one JSON object a line), or a task built from PyPI releases.

A row names the repository (`repo`, found under `--repos DIR`, at `base_commit`) or a `pypi` pair of
source releases; the report (`problem_statement`); the hidden tests (`test_patch`, `FAIL_TO_PASS`,
`PASS_TO_PASS`; lists may be JSON-encoded strings, as in the published datasets); optionally the gold
fix (`patch`, which the `oracle` policy writes), `checks`, `setup`, `sandbox` (as in `.github/ai-fix.yml`)
and `test_command` (how to run the hidden tests; `{tests}` stands for their files). Other fields of the
published rows (`version`, `hints_text`, ...) are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bot.contract.config import CheckEntry, SandboxEntry
from bot.errors import ConfigError
from bot.eval.gitrepo import patched_paths

SETS_PACKAGE = "bot.eval.sets"
"""Where the shipped task sets live (`<name>.jsonl`, described by `sets.json`)."""


class PypiRelease(BaseModel):
    """Two consecutive source releases of a package: the base is what the model gets, the fix's tests are hidden."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    base: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
    fixed: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
    base_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    fixed_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


def _json_list(value: Any) -> Any:
    """The published datasets store lists as JSON text: `"[\\"tests/test_a.py::test_b\\"]"`."""
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise ValueError(f"a list, or a JSON-encoded list of test ids ({exc.msg})") from None
    return value


class EvalTask(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    instance_id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
    """Names the task's folders: letters, digits and `._+-`."""
    repo: str = ""
    """`owner/name`: found as `owner__name.git` (a bare mirror) or `owner__name` (a clone) under `--repos`."""
    base_commit: str = ""
    problem_statement: str = Field(min_length=1)
    patch: str = ""
    """The gold fix (a diff against the base), for the `oracle` policy."""
    test_patch: str = ""
    """The hidden tests (a diff against the base); never shown to the model."""
    fail_to_pass: list[str] = Field(alias="FAIL_TO_PASS", min_length=1)
    pass_to_pass: list[str] = Field(default_factory=list, alias="PASS_TO_PASS")
    checks: list[CheckEntry] | None = None
    setup: list[str] | None = None
    sandbox: SandboxEntry | None = None
    test_command: str | None = Field(default=None, min_length=1)
    pypi: PypiRelease | None = None

    _lists = field_validator("fail_to_pass", "pass_to_pass", "setup", mode="before")(_json_list)

    @model_validator(mode="after")
    def _has_a_source(self) -> EvalTask:
        if self.pypi is None and not (self.repo and self.base_commit and self.test_patch):
            raise ValueError("a task needs `repo`, `base_commit` and `test_patch`, or a `pypi` release pair")
        return self

    @property
    def title(self) -> str:
        return self.problem_statement.strip().splitlines()[0].lstrip("# ").strip() or self.instance_id


def check_patches(tasks: Sequence[EvalTask]) -> None:
    """ConfigError naming each task whose `patch` or `test_patch` touches a path outside its repository (absolute,
    `..`, `.git`) or is no diff, read as git reads it: before anything of the eval runs."""
    problems = []
    for task in tasks:
        for field in ("patch", "test_patch"):
            try:
                patched_paths(getattr(task, field))
            except ValueError as exc:
                problems.append(f"task {task.instance_id}: {field}: {exc}")
    if problems:
        raise ConfigError("\n".join(problems[:20]) + ("\n..." if len(problems) > 20 else ""))


def _where(err: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: " if loc else ""


def parse_tasks(text: str, source: str) -> list[EvalTask]:
    """Every row of a JSONL text; ConfigError naming each bad line and field."""
    tasks: list[EvalTask] = []
    problems: list[str] = []
    seen: set[str] = set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            task = EvalTask.model_validate_json(line)
        except ValidationError as exc:
            for err in exc.errors():
                msg = str(err["msg"]).removeprefix("Value error, ")
                problems.append(f"{source} line {n}: {_where(dict(err))}{msg}")
            continue
        if task.instance_id in seen:
            problems.append(f"{source} line {n}: instance_id {task.instance_id!r} appears twice; ids must be unique")
        seen.add(task.instance_id)
        tasks.append(task)
    if problems:
        raise ConfigError("\n".join(problems[:20]) + ("\n..." if len(problems) > 20 else ""))
    if not tasks:
        raise ConfigError(f"{source} holds no task: one JSON object a line (see `ai-fix eval --list-sets`)")
    return tasks


@cache
def shipped_sets() -> dict[str, str]:
    """The task sets in the package: name → one line saying what it is."""
    described: dict[str, str] = json.loads(resources.files(SETS_PACKAGE).joinpath("sets.json").read_text())
    return described


def load_tasks(spec: str) -> tuple[str, list[EvalTask]]:
    """(name, tasks) from a JSONL file, or from a shipped set named by `spec`."""
    if spec in shipped_sets():
        return spec, parse_tasks(resources.files(SETS_PACKAGE).joinpath(f"{spec}.jsonl").read_text(), spec)
    path = Path(spec)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        sets = ", ".join(shipped_sets())
        raise ConfigError(
            f"cannot read the tasks file {spec} ({exc.strerror}); pass a JSONL file or a shipped set ({sets})"
        ) from exc
    return path.stem, parse_tasks(text, str(path))
