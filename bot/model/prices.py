"""Cost of a call, from the one price table (`prices.json`)."""

from __future__ import annotations

import json
import logging
from functools import cache
from importlib import resources

from pydantic import BaseModel

from bot.model.base import Usage

log = logging.getLogger(__name__)


class Price(BaseModel):
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float


@cache
def price_table() -> dict[str, Price]:
    raw = json.loads(resources.files("bot.model").joinpath("prices.json").read_text())
    return {k: Price.model_validate(v) for k, v in raw.items() if not k.startswith("_")}


def price_for(model: str) -> Price | None:
    """The longest table key that prefixes the id, so `claude-sonnet-4-5-20250929` prices as its family.

    Cloud ids name their family too: Bedrock's `us.anthropic.claude-sonnet-4-5-20250929-v1:0` and
    Vertex AI's `claude-sonnet-4-5@20250929` price as `claude-sonnet-4-5` (list prices; a region's
    surcharge is not modelled).
    """
    model = model.rpartition("anthropic.")[2].replace("@", "-")
    table = price_table()
    keys = [k for k in table if model == k or model.startswith(k + "-")]
    return table[max(keys, key=len)] if keys else None


def cost_usd(model: str, usage: Usage) -> float | None:
    """USD for one call, or None when the model is not in the table (the caller warns; never a refusal)."""
    price = price_for(model)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * price.cache_read
    ) / 1_000_000


class Pricer:
    """A backend's costs: from the table, or None with one warning per model missing there (never a refusal)."""

    def __init__(self) -> None:
        self._unpriced: set[str] = set()

    def cost(self, model: str, usage: Usage) -> float | None:
        cost = cost_usd(model, usage)
        if cost is None and model not in self._unpriced:
            self._unpriced.add(model)
            log.warning("model %r is not in bot/model/prices.json: its cost is reported as null; add it there", model)
        return cost
