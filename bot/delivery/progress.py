"""The one progress comment on the issue: a checklist of phases, updated in place."""

from __future__ import annotations

from bot.delivery.models import PHASES, Phase, Progress
from bot.delivery.render import OUTCOME_WORDS
from bot.markdown import inert_line
from bot.markers import PROGRESS_KIND, marker

KIND_WORDS = {"issue": "first run", "retry": "`/agent retry`", "review": "review"}
PHASE_WORDS: dict[Phase, str] = {
    "contract": "Task contract",
    "baseline": "Baseline checks on the base commit",
    "round": "Round",
    "checks": "Contract checks on the change",
    "pull_request": "Pull request",
}


def render_progress(progress: Progress) -> str:
    """Done phases ticked, the current one in bold (⏳, or ❌ where a run stopped), then the PR link and outcome."""
    current = PHASES.index(progress.current) if progress.current else len(PHASES)
    lines = [marker(PROGRESS_KIND, progress.issue_number), "### ai-fix progress", ""]
    for r in progress.rounds:
        lines.append(
            f"- [x] Round {r.n} ({KIND_WORDS[r.kind]}): {r.outcome}" + (f" at {r.head_sha[:7]}" if r.head_sha else "")
        )
    for i, phase in enumerate(PHASES):
        words = PHASE_WORDS[phase]
        if phase == "round":
            words = f"Round {progress.round_n} ({KIND_WORDS[progress.round_kind]})"
        if i < current:
            lines.append(f"- [x] {words}")
        elif i == current:
            lines.append(f"- [ ] **{words}** " + ("❌ stopped here" if progress.outcome else "⏳ in progress"))
        else:
            lines.append(f"- [ ] {words}")
    if progress.setup:
        lines += ["", f"Setup: {inert_line(progress.setup)}"]
    if progress.pr_url:
        lines += ["", f"Pull request: {progress.pr_url}"]
    if progress.outcome:
        lines += ["", OUTCOME_WORDS[progress.outcome], "", f"Why: {inert_line(progress.reason)}"]
    return "\n".join(lines) + "\n"
