"""What an eval compares: each `--model` under each `--config` (loop settings: budgets, retries, context sizes).

A config file is YAML:

    name: tight                 # the label in the report (default: the file's name without .yml)
    budget:                     # `budget:` keys of .github/ai-fix.yml, laid over the task's
      max_steps: 12
      max_retries_same_failure: 1
    loop:                       # the loop's context sizes
      repo_map_tokens: 800
      slice_tokens: 800
      history_tokens: 600
      max_tokens: 4096
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.contract.config import BudgetEntry
from bot.errors import ConfigError

DEFAULT = "default"


class LoopEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    repo_map_tokens: int | None = Field(default=None, gt=0)
    slice_tokens: int | None = Field(default=None, gt=0)
    history_tokens: int | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    reserve: float | None = Field(default=None, ge=0, lt=1)


class ConfigFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str | None = Field(default=None, min_length=1, max_length=60)
    budget: BudgetEntry | None = None
    loop: LoopEntry | None = None


@dataclass(frozen=True)
class HarnessConfig:
    name: str
    budget: dict[str, Any]
    """Only the keys the file sets."""
    loop: dict[str, Any]


@dataclass(frozen=True)
class Variant:
    label: str
    model: str
    config: HarnessConfig

    @property
    def slug(self) -> str:
        """The variant's folder name: the label with anything but letters, digits and `._@+-` made `_`."""
        return re.sub(r"[^A-Za-z0-9._@+-]+", "_", self.label).strip("._") or "model"


def load_config(path: Path) -> HarnessConfig:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read it ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path}: not valid YAML ({exc})") from exc
    try:
        parsed = ConfigFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"--config {path}: {problems} (keys: name, budget, loop)") from exc
    return HarnessConfig(
        name=parsed.name or path.stem,
        budget=parsed.budget.model_dump(exclude_unset=True) if parsed.budget else {},
        loop=parsed.loop.model_dump(exclude_none=True) if parsed.loop else {},
    )


def variants(models: list[str], configs: list[HarnessConfig]) -> list[Variant]:
    """Every model under every config; a label names the config only when there is one to tell apart."""
    configs = configs or [HarnessConfig(DEFAULT, {}, {})]
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ConfigError(f"--config names must differ (got {', '.join(names)}); set `name:` in each file")
    if len(set(models)) != len(models):
        raise ConfigError("a --model is given twice; name each model once")
    tagged = len(configs) > 1 or configs[0].name != DEFAULT
    return [Variant(f"{m}@{c.name}" if tagged else m, m, c) for c in configs for m in models]
