"""The history layer's budget: older conclusions become a few lines by the small model; ruled-out approaches stay."""

from __future__ import annotations

from bot.loop.accounting import ask
from bot.loop.harness import Harness
from bot.loop.prompt import prompt
from bot.loop.records import StepRecord
from bot.loop.state import RunState
from bot.model.base import ModelRequest, estimate_tokens

KEEP_RECENT = 3
MIN_CONCLUSIONS = 6


def compress_history(h: Harness, state: RunState, record: StepRecord) -> None:
    conclusions = state.notes.conclusions
    if len(conclusions) < MIN_CONCLUSIONS or estimate_tokens("\n".join(conclusions)) <= h.config.history_tokens:
        return
    older = conclusions[:-KEEP_RECENT]
    notes = h.redact("\n".join(f"- {c}" for c in older))
    request = ModelRequest(
        model=h.config.small_model,
        system=prompt("compress.md"),
        purpose="compress",
        messages=[{"role": "user", "content": notes}],
        max_tokens=1024,
    )
    response = ask(h, state, request, record)
    lines = [line.removeprefix("- ").strip() for line in response.text.splitlines() if line.strip()]
    state.notes.compressed(lines, KEEP_RECENT)
