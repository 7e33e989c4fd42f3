"""Choosing the lines of a ranked file worth showing: frames, definitions, call sites (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.context.mentions import Frame
from bot.context.tags import Definition
from bot.context.terms import identifier_terms

FRAME_CONTEXT = 6
"""Lines shown either side of a traceback frame."""
CALL_CONTEXT = 2
MAX_SLICE_LINES = 80
"""A longer definition is cut to its first lines: its signature and docstring say the most."""
MAX_CALL_SITES = 3
HEAD_LINES = 30


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    reason: str
    priority: int = 0
    """Lower is shown first when the budget is short: frames, definitions, call sites, fallbacks."""


def _enclosing(definitions: list[Definition], line: int) -> Definition | None:
    inside = [d for d in definitions if d.start_line <= line <= d.end_line]
    return min(inside, key=lambda d: d.end_line - d.start_line, default=None)


def _capped(start: int, end: int) -> int:
    return min(end, start + MAX_SLICE_LINES - 1)


def choose_spans(
    lines: list[str],
    definitions: list[Definition],
    frames: list[Frame],
    names: set[str],
    used_names: set[str],
    terms: dict[str, int],
) -> list[Span]:
    """Spans of one file in priority order: frames, definitions of mentioned names, call sites of
    mentioned names defined elsewhere, else the definition sharing most terms with the query."""
    total = len(lines)
    spans: list[Span] = []
    for frame in sorted(frames, key=lambda f: -f.depth):
        where = f"traceback frame, line {frame.line}" + (f" in {frame.function}" if frame.function else "")
        enclosing = _enclosing(definitions, frame.line)
        if enclosing is not None and enclosing.end_line - enclosing.start_line < 2 * MAX_SLICE_LINES:
            start = max(enclosing.start_line, frame.line - MAX_SLICE_LINES // 2)
            spans.append(Span(start, _capped(start, enclosing.end_line), where, 0))
        else:
            spans.append(Span(max(1, frame.line - FRAME_CONTEXT), min(total, frame.line + FRAME_CONTEXT), where, 0))
    for definition in definitions:
        if definition.name in names:
            end = _capped(definition.start_line, definition.end_line)
            spans.append(Span(definition.start_line, end, f"definition of {definition.name}", 1))
    calls = 0
    if used_names:
        pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, used_names))) + r")\b")
        for number, text in enumerate(lines, 1):
            found = pattern.search(text)
            if found is None:
                continue
            spans.append(
                Span(max(1, number - CALL_CONTEXT), min(total, number + CALL_CONTEXT), f"uses {found.group(1)}", 2)
            )
            calls += 1
            if calls >= MAX_CALL_SITES:
                break
    if not spans and total:
        spans.append(_best_definition(lines, definitions, terms) or Span(1, min(total, HEAD_LINES), "start of file", 3))
    return spans


def _best_definition(lines: list[str], definitions: list[Definition], terms: dict[str, int]) -> Span | None:
    best: tuple[int, Definition] | None = None
    for definition in definitions:
        if definition.kind == "class" and definition.end_line - definition.start_line > MAX_SLICE_LINES:
            continue  # its methods are candidates of their own
        body = "\n".join(lines[definition.start_line - 1 : definition.end_line])
        words = set(re.findall(r"[A-Za-z_]\w*", body))
        score = sum(1 for word in words for term in identifier_terms(word) if term in terms)
        if score and (best is None or score > best[0]):
            best = (score, definition)
    if best is None:
        return None
    definition = best[1]
    return Span(
        definition.start_line,
        _capped(definition.start_line, definition.end_line),
        f"{definition.kind} {definition.name} shares the most words with the query",
        3,
    )


def merge(spans: list[Span]) -> list[Span]:
    """Overlapping or touching spans become one, keeping every reason and the best priority;
    returned in priority order (then line order)."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if merged and span.start <= merged[-1].end + 1:
            last = merged[-1]
            reasons = last.reason if span.reason in last.reason.split("; ") else f"{last.reason}; {span.reason}"
            merged[-1] = Span(last.start, max(last.end, span.end), reasons, min(last.priority, span.priority))
        else:
            merged.append(span)
    return sorted(merged, key=lambda s: (s.priority, s.start))
