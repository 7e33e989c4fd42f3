"""Rendering slices and the repo map into a token budget, fitted by binary search (pure)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from bot.context.base import Slice
from bot.context.tags import Definition
from bot.context.terms import count_tokens

T = TypeVar("T")
MAP_DEFINITIONS_PER_FILE = 12


def fit(items: Sequence[T], render: Callable[[Sequence[T]], str], budget: int) -> tuple[int, str]:
    """The longest prefix of items whose rendering fits the budget: (how many, text).

    Rendering grows with every item, so the largest fitting prefix is found by binary search.
    """
    low, high = 0, len(items)
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(render(items[:middle])) <= budget:
            low = middle
        else:
            high = middle - 1
    text = render(items[:low]) if low else ""
    return low, text


def _fence(path: str) -> str:
    return {"py": "python", "js": "javascript", "ts": "typescript", "tsx": "tsx", "go": "go", "rs": "rust"}.get(
        path.rsplit(".", 1)[-1], path.rsplit(".", 1)[-1]
    )


def render_slices(slices: Sequence[Slice]) -> str:
    """Slices grouped by file in rank order, each in line order under a provenance header."""
    by_file: dict[str, list[Slice]] = {}
    for piece in slices:
        by_file.setdefault(piece.path, []).append(piece)
    out: list[str] = []
    for path, pieces in by_file.items():
        for piece in sorted(pieces, key=lambda s: s.start_line):
            provenance = [piece.reason, f"blob {piece.blob[:12]}"]
            if piece.last_commit_date:
                provenance.append(f"last commit {piece.last_commit_date}")
            out.append(f"### {path}:{piece.start_line}-{piece.end_line} ({'; '.join(provenance)})")
            out.append(f"```{_fence(path)}\n{piece.text.rstrip()}\n```")
    return "\n".join(out) + "\n" if out else ""


def render_map(entries: Sequence[tuple[str, list[Definition]]]) -> str:
    """`path:` then one indented line per top-level definition (kind, name, first line)."""
    out: list[str] = []
    for path, definitions in entries:
        out.append(f"{path}:")
        shown = definitions[:MAP_DEFINITIONS_PER_FILE]
        out.extend(f"  {d.kind} {d.name} ({d.start_line})" for d in shown)
        if len(definitions) > len(shown):
            out.append(f"  … {len(definitions) - len(shown)} more")
    return "\n".join(out) + "\n" if out else ""
