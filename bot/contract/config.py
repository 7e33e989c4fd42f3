"""`.github/ai-fix.yml`: strict parsing with errors that name the key and the line.

A broken file is an error, never a silent default: unknown keys, wrong types, duplicate keys and
YAML syntax errors each produce a line such as
`.github/ai-fix.yml line 7: budget.max_steps: must be an integer (got 'thirty')`.
Keys that are absent take the documented defaults of the contract models.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from bot.contract.models import Budget, ModelConfig, SandboxConfig
from bot.errors import ConfigError

CONFIG_PATH = ".github/ai-fix.yml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CheckEntry(_Strict):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Letters, digits, `_.-`: how the issue's `## Checks` and the PR evidence refer to it."""
    run: str = Field(min_length=1)
    timeout: int = Field(default=600, gt=0, le=86400)
    run_tests: str | None = Field(default=None, min_length=1)
    """The same tests, only those in the files that replace `{tests}` (e.g. `npx vitest run {tests}`)."""

    @field_validator("run_tests")
    @classmethod
    def _has_placeholder(cls, command: str | None) -> str | None:
        if command is not None and "{tests}" not in command:
            raise ValueError(
                "must contain {tests}, where ai-fix puts the test files to run (e.g. npx vitest run {tests})"
            )
        return command


class ScopeEntry(_Strict):
    allow: list[str] = Field(default_factory=lambda: ["**"])
    deny: list[str] = Field(default_factory=list)

    @field_validator("allow", "deny")
    @classmethod
    def _non_empty_globs(cls, globs: list[str]) -> list[str]:
        if any(not g.strip() for g in globs):
            raise ValueError("globs must be non-empty strings")
        return globs


class BudgetEntry(Budget):
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*")
    @classmethod
    def _positive(cls, value: float, info: ValidationInfo) -> float:
        if value < 0 or (value == 0 and info.field_name != "max_retries_same_failure"):
            raise ValueError("must be a positive number")
        return value


class SandboxEntry(SandboxConfig):
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("pids", "memory_mb", "cpus")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be a positive number")
        return value


class ModelEntry(ModelConfig):
    model_config = ConfigDict(extra="forbid", strict=True)


class RepoConfig(_Strict):
    """The parsed file; `model_fields_set` tells which keys it sets (absent `checks`: detect them)."""

    checks: list[CheckEntry] = Field(default_factory=list)
    setup: list[str] = Field(default_factory=list)
    scope: ScopeEntry = Field(default_factory=ScopeEntry)
    budget: BudgetEntry = Field(default_factory=BudgetEntry)
    sandbox: SandboxEntry = Field(default_factory=SandboxEntry)
    model: ModelEntry = Field(default_factory=ModelEntry)
    approval: Literal["none", "plan"] = "none"
    """`plan`: every issue job first proposes two approaches and waits for a maintainer's `/agent approve`."""
    approval_timeout_days: float = Field(default=7.0, gt=0, le=365)
    """How long a plan waits for an answer before the job is cancelled (fractions allowed)."""

    @field_validator("checks")
    @classmethod
    def _unique_names(cls, checks: list[CheckEntry]) -> list[CheckEntry]:
        names = [c.name for c in checks]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"check names must be unique; repeated: {', '.join(dup)}")
        return checks


def _locate(node: yaml.Node | None, loc: tuple[int | str, ...], *, key: bool = False) -> int:
    """The 1-based line of what a pydantic error location points at: the key itself when `key`
    (an unknown key has no value worth pointing at), else its value; the nearest parent if absent."""
    line = node.start_mark.line + 1 if node is not None else 1
    for i, part in enumerate(loc):
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            if pair is None:
                return line
            if key and i == len(loc) - 1:
                return pair[0].start_mark.line + 1
            node = pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return line
        line = node.start_mark.line + 1
    return line


def _duplicate_keys(node: yaml.Node | None, path: str = "") -> list[str]:
    problems: list[str] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for k, v in node.value:
            name = f"{path}.{k.value}" if path else str(k.value)
            if k.value in seen:
                problems.append(f"line {k.start_mark.line + 1}: {name}: duplicate key; keep only one")
            seen.add(k.value)
            problems.extend(_duplicate_keys(v, name))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems.extend(_duplicate_keys(item, f"{path}[{i}]"))
    return problems


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as `list[CheckEntry]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)


def _allowed_keys(loc: tuple[int | str, ...]) -> str:
    model: type[BaseModel] | None = RepoConfig
    for part in loc[:-1]:
        if isinstance(part, str) and model is not None:
            model = _model_in(model.model_fields[part].annotation)
    return ", ".join(model.model_fields) if model is not None else ""


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(err: dict[str, Any], allowed: str) -> str:
    kind = err["type"]
    got = err.get("input")
    if kind == "extra_forbidden":
        return f"unknown key; allowed here: {allowed}"
    if kind == "missing":
        return "required key is missing"
    if kind in ("int_type", "int_parsing"):
        return f"must be an integer (got {got!r})"
    if kind in ("float_type", "float_parsing"):
        return f"must be a number (got {got!r})"
    if kind == "string_type":
        return f"must be a string (got {got!r}); quote it"
    if kind == "list_type":
        return f"must be a list (got {got!r})"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be a mapping of keys (got {got!r})"
    hint = " (YAML reads yes, no, on and off as true/false: quote the value)" if isinstance(got, bool) else ""
    if kind == "literal_error":
        return f"must be one of {err['ctx']['expected']} (got {got!r}){hint}"
    if hint:
        return f"got {got!r}{hint}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{msg} (got {got!r})" if got is not None and not isinstance(got, (dict, list)) else msg


def parse_config(text: str, path: str = CONFIG_PATH) -> RepoConfig:
    """Parse the repository config; raise ConfigError listing every problem with its line."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {exc.problem or exc.context}; fix the syntax") from exc
    if data is None:
        return RepoConfig()
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path} line 1: the file must be a mapping with the keys {', '.join(RepoConfig.model_fields)}"
            f" (got {type(data).__name__})"
        )
    problems = [f"{path} {p}" for p in _duplicate_keys(root)]
    config: RepoConfig | None = None
    try:
        config = RepoConfig.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            at = _locate(root, loc, key=err["type"] == "extra_forbidden")
            problems.append(f"{path} line {at}: {_dotted(loc)}: {_message(dict(err), _allowed_keys(loc))}")
    if problems or config is None:
        raise ConfigError("\n".join(problems))
    return config
