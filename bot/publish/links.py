"""The line that links a run's page in the run viewer, as the PR body, the check run and the issue comment show it."""

from __future__ import annotations


def run_link(url: str) -> str:
    """`url` is the signed link to this job's page (built by the composition root; never text from the model)."""
    return f"🔎 [Open the run]({url}): every step with its intent and checks, each checkpoint's diff, and the cost."
