"""Cost of a call, from the one price table (`prices.json`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import cache
from importlib import resources

from pydantic import BaseModel, Field

from bot.model.base import Usage

log = logging.getLogger(__name__)


class Price(BaseModel):
    """USD per million tokens; a price given in AIFIX_MODEL_PRICES may leave out the cache rates (then the input rate)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)


@cache
def price_table() -> dict[str, Price]:
    raw = json.loads(resources.files("bot.model").joinpath("prices.json").read_text())
    return {k: Price.model_validate(v) for k, v in raw.items() if not k.startswith("_")}


def price_for(model: str, extra: Mapping[str, Price] | None = None) -> Price | None:
    """The longest table key that prefixes the id, so `claude-sonnet-4-5-20250929` prices as its family.

    Cloud ids name their family too: Bedrock's `us.anthropic.claude-sonnet-4-5-20250929-v1:0` and
    Vertex AI's `claude-sonnet-4-5@20250929` price as `claude-sonnet-4-5` (list prices; a region's
    surcharge is not modelled). `extra` (the operator's AIFIX_MODEL_PRICES) is looked at first.
    """
    if extra and model in extra:
        return extra[model]
    model = model.rpartition("anthropic.")[2].replace("@", "-")
    table = {**price_table(), **(extra or {})}
    keys = [k for k in table if model == k or model.startswith(k + "-")]
    return table[max(keys, key=len)] if keys else None


def cost_usd(model: str, usage: Usage, extra: Mapping[str, Price] | None = None) -> float | None:
    """USD for one call, or None when the model has no price (the caller warns; never a refusal)."""
    price = price_for(model, extra)
    if price is None:
        return None
    cache_write = price.input if price.cache_write is None else price.cache_write
    cache_read = price.input if price.cache_read is None else price.cache_read
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_write_tokens * cache_write
        + usage.cache_read_tokens * cache_read
    ) / 1_000_000


class Pricer:
    """A backend's costs: from the operator's prices or the table, else None with one warning per model (never a refusal)."""

    def __init__(self, extra: Mapping[str, Price] | None = None) -> None:
        self.extra = dict(extra or {})
        self._unpriced: set[str] = set()

    def cost(self, model: str, usage: Usage) -> float | None:
        cost = cost_usd(model, usage, self.extra)
        if cost is None and model not in self._unpriced:
            self._unpriced.add(model)
            log.warning(
                "model %r has no price: its tokens are counted and its cost is shown as unknown; give it one in "
                'AIFIX_MODEL_PRICES (JSON: the model spec, e.g. "openai:NAME", to {"input": 1.0, "output": 2.0} '
                "in USD per million tokens)",
                model,
            )
        return cost
