"""How numbers read on the page (the templates' filters and the chart's axis share them)."""

from __future__ import annotations

from typing import Any


def money(value: Any) -> str:
    """Dollars: four decimals below $1 (a step costs fractions of a cent), else cents; `unknown` when not known."""
    if not isinstance(value, int | float):
        return "unknown"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"
