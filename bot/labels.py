"""The labels ai-fix reads and writes on GitHub, with the colour and description it creates them with.

Each is made in a repository when the App is installed on it (a `labels` job), so a maintainer finds them
in the label picker instead of typing their names; a name stays the one `bot/` compares against.
"""

from __future__ import annotations

from dataclasses import dataclass

PLAN_LABEL = "ai-fix:plan"
"""An issue with this label plans first and waits for approval, whatever `.github/ai-fix.yml` says."""
HANDOFF_LABEL = "ai-fix:handoff"
"""On a pull request ai-fix could not finish (handed off or failed)."""
UNVERIFIED_LABEL = "ai-fix:unverified"
"""On a pull request whose change the checks do not show fixed."""
NO_CI_FIX_LABEL = "ai-fix:no-ci-fix"
"""A pull request carrying this label is left alone: no re-run, no round."""


@dataclass(frozen=True)
class Label:
    name: str
    color: str
    """Six hex digits, no `#` (as GitHub takes it)."""
    description: str
    """At most 100 characters (GitHub's limit)."""


def ai_fix_labels(trigger_label: str) -> tuple[Label, ...]:
    """Every label ai-fix uses; `trigger_label` is AIFIX_TRIGGER_LABEL."""
    return (
        Label(trigger_label, "5319e7", "ai-fix works on this issue and opens a pull request with check evidence"),
        Label(PLAN_LABEL, "8b5cf6", "ai-fix proposes two approaches and waits for /agent approve before changing code"),
        Label(HANDOFF_LABEL, "d93f0b", "ai-fix could not finish: its pull request says where it stopped"),
        Label(UNVERIFIED_LABEL, "fbca04", "ai-fix's change is not shown fixed by the checks: review with care"),
        Label(NO_CI_FIX_LABEL, "c5def5", "ai-fix leaves this pull request's failing CI alone (no re-run, no fix)"),
    )
