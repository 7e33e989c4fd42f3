"""The cumulative cost and tokens over a run's steps, as an inline SVG drawn on the server (no script)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from bot.viewer.formats import money

WIDTH, HEIGHT = 720, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 72, 16, 36


@dataclass(frozen=True)
class Point:
    label: str
    """The step's number."""
    cost: float | None
    """Dollars spent up to and including this step; None once a step's cost is unknown."""
    tokens: int
    """Tokens in and out up to and including this step."""


def _ticks(top: float, n: int = 4) -> list[float]:
    return [top * i / n for i in range(n + 1)]


def _count(value: float) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"


def cost_chart(points: Sequence[Point]) -> str:
    """Two lines over the steps: dollars on the left axis, tokens on the right. Empty before the first step."""
    if not points:
        return ""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    max_cost = max((p.cost for p in points if p.cost is not None), default=0.0) or 1e-6
    max_tokens = max(p.tokens for p in points) or 1
    step_x = plot_w / max(len(points) - 1, 1)

    def x(i: int) -> float:
        return LEFT + (i * step_x if len(points) > 1 else plot_w / 2)

    def y(value: float, top: float) -> float:
        return TOP + plot_h - plot_h * value / top

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="Cumulative cost and tokens over {len(points)} steps">'
    ]
    for cost_tick, token_tick in zip(_ticks(max_cost), _ticks(max_tokens)):
        ty = y(cost_tick, max_cost)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}"/>')
        parts.append(
            f'<text class="axis cost" x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">{money(cost_tick)}</text>'
        )
        parts.append(f'<text class="axis tokens" x="{WIDTH - RIGHT + 6}" y="{ty + 4:.1f}">{_count(token_tick)}</text>')
    for i, p in enumerate(points):
        parts.append(
            f'<text class="axis" x="{x(i):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{escape(p.label)}</text>'
        )
    parts.append(f'<text class="axis" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle">step</text>')
    known = [(i, p.cost) for i, p in enumerate(points) if p.cost is not None]
    series = [
        ("tokens", [(x(i), y(p.tokens, max_tokens)) for i, p in enumerate(points)]),
        ("cost", [(x(i), y(c, max_cost)) for i, c in known]),
    ]
    for name, xy in series:
        if len(xy) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in xy)
            parts.append(f'<polyline class="line {name}" points="{path}"/>')
    for i, p in enumerate(points):
        cost = money(p.cost) if p.cost is not None else "unknown"
        tip = f"step {p.label}: {cost}, {p.tokens:,} tokens so far"
        parts.append(f'<circle class="dot tokens" cx="{x(i):.1f}" cy="{y(p.tokens, max_tokens):.1f}" r="3.5">')
        parts.append(f"<title>{escape(tip)}</title></circle>")
        if p.cost is not None:
            parts.append(f'<circle class="dot cost" cx="{x(i):.1f}" cy="{y(p.cost, max_cost):.1f}" r="3.5">')
            parts.append(f"<title>{escape(tip)}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)
