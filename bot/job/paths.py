"""Where a job keeps its run's trace: beside its job directory, so the trace outlives the workspace."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.job.checkpoint import STATE_KEY


def trace_file(job_dir: str | Path) -> Path:
    """`<job_dir>.trace.jsonl` (appended, not a suffix swap: a repository name may hold a dot)."""
    return Path(f"{job_dir}.trace.jsonl")


def job_trace(state: Mapping[str, Any]) -> Path | None:
    """The trace of the job whose persisted state is `state` (a `RoundState` under STATE_KEY), once it has a job directory."""
    kept = state.get(STATE_KEY)
    job_dir = kept.get("job_dir") if isinstance(kept, Mapping) else None
    return trace_file(job_dir) if isinstance(job_dir, str) and job_dir else None
