"""The one comment ai-fix keeps on an issue, updated in place: the progress, the outcome, the handoff
when no pull request carries it, and the task contract."""

from __future__ import annotations

from bot.ci.models import CiRecord
from bot.markdown import inert_line
from bot.markers import PROGRESS_KIND, marker
from bot.publish.links import run_link
from bot.publish.models import Progress
from bot.publish.render import OUTCOME_WORDS
from bot.vocabulary import COMMENT_PHASE_WORDS, COMMENT_PHASES, KIND_WORDS

CI_SECTION = "<!-- ai-fix:ci-notes -->"
CI_SECTION_END = "<!-- /ai-fix:ci-notes -->"


def render_progress(progress: Progress) -> str:
    """Done phases ticked, the current one in bold (⏳, or ❌ where a run stopped), the PR link, the outcome with
    what was not verified, the handoff, then the contract."""
    lines = [marker(PROGRESS_KIND, progress.issue_number), "### ai-fix progress", ""]
    for r in progress.rounds:
        lines.append(
            f"- [x] Round {r.n} ({KIND_WORDS[r.kind]}): {r.outcome}" + (f" at {r.head_sha[:7]}" if r.head_sha else "")
        )
    lines += _phases(progress) + _facts(progress) + _appendix(progress)
    return with_ci_section("\n".join(lines) + "\n", progress.ci)


def _phases(progress: Progress) -> list[str]:
    """A checkbox per phase: done, the current one in bold, the ones to come."""
    current = COMMENT_PHASES.index(progress.current) if progress.current else len(COMMENT_PHASES)
    lines = []
    for i, phase in enumerate(COMMENT_PHASES):
        if phase == "plan" and not (progress.plan or progress.current == "plan"):
            continue
        words = COMMENT_PHASE_WORDS[phase]
        if phase == "round":
            words = f"Round {progress.round_n} ({KIND_WORDS[progress.round_kind]})"
        if phase == "pull_request" and i < current and progress.outcome and not progress.pr_url:
            lines.append(f"- [ ] {words}: none (nothing was kept to review)")
        elif i < current:
            lines.append(f"- [x] {words}")
        elif i == current:
            lines.append(f"- [ ] **{words}** " + _marker(progress))
        else:
            lines.append(f"- [ ] {words}")
    return lines


def _facts(progress: Progress) -> list[str]:
    """Setup, the PR, the run's page, the outcome, what was not verified, the handoff: each when there is one."""
    lines: list[str] = []
    if progress.setup:
        lines += ["", f"Setup: {inert_line(progress.setup)}"]
    if progress.pr_url:
        lines += ["", f"Pull request: {progress.pr_url}"]
    if progress.run_url:
        lines += ["", run_link(progress.run_url)]
    if progress.outcome:
        lines += ["", OUTCOME_WORDS[progress.outcome], "", f"Why: {inert_line(progress.reason)}"]
    if progress.cancelled:
        lines += ["", f"🛑 **Cancelled** before any change: {inert_line(progress.cancelled)}"]
    if progress.not_verified:
        lines += ["", "**Not verified:**", *(f"- {item}" for item in progress.not_verified)]
    if progress.handoff:
        lines += ["", "#### Handoff", "", *progress.handoff]
    return lines


def _appendix(progress: Progress) -> list[str]:
    """The plan and the contract: open when they are what the comment waits on, folded otherwise."""
    lines: list[str] = []
    for text, title, open_ in (
        (progress.plan, "Plan", progress.waiting or bool(progress.cancelled)),
        (progress.contract, "Task contract", progress.contract_open),
    ):
        if text and open_:
            lines += ["", "---", "", text.rstrip()]
        elif text:
            lines += ["", f"<details><summary>{title}</summary>", "", text.rstrip(), "", "</details>"]
    return lines


def with_ci_section(body: str, record: CiRecord) -> str:
    """`body` (a progress comment) ending with the CI and conflicts section of `record`, replacing the one it had."""
    start = body.find(CI_SECTION)
    if start >= 0:
        end = body.find(CI_SECTION_END, start)
        body = body[:start].rstrip("\n") + "\n" + (body[end + len(CI_SECTION_END) :].lstrip("\n") if end >= 0 else "")
    if not record.notes:
        return body
    notes = [f"- `{n.head_sha[:7]}` {inert_line(n.text)}" for n in record.notes]
    section = [CI_SECTION, "#### CI and conflicts", "", *notes, CI_SECTION_END]
    return body.rstrip("\n") + "\n\n" + "\n".join(section) + "\n"


def _marker(progress: Progress) -> str:
    if progress.outcome or progress.cancelled:
        return "❌ stopped here"
    return "⏸️ waiting for a maintainer's answer" if progress.waiting else "⏳ in progress"
