"""The eval's report: report.json (every run and the figures), report.md (one table per comparison) and a chart."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.eval.models import CLASSES, Rate, Summary, TaskRecord
from bot.eval.progress import money

CHART = "classes.png"
COLOURS = {"incorrect": "#c62828", "automatic": "#2e7d32", "partial": "#f9a825", "refused": "#9e9e9e"}


@dataclass(frozen=True)
class Comparison:
    """Variants compared with one thing held fixed: the harness (a config) or the model."""

    title: str
    locked: str
    variants: list[str]


def comparisons(variants: Sequence[tuple[str, str, str]]) -> list[Comparison]:
    """(variant, model, config) triples → the tables to show: models per config, then configs per model."""
    models = list(dict.fromkeys(m for _, m, _ in variants))
    configs = list(dict.fromkeys(c for _, _, c in variants))
    out: list[Comparison] = []
    if len(models) > 1 or len(configs) == 1:
        for config in configs:
            names = [v for v, _, c in variants if c == config]
            title = "Models compared" if len(models) > 1 else "Results"
            out.append(Comparison(f"{title}, harness locked (config: {config})", f"harness: {config}", names))
    if len(configs) > 1:
        for model in models:
            names = [v for v, m, _ in variants if m == model]
            out.append(Comparison(f"Harnesses compared, model locked ({model})", f"model: {model}", names))
    return out


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def rate(r: Rate) -> str:
    """`k/n p % (low-high)`: the count, the rate and its 95 % interval."""
    if r.rate is None or r.low is None or r.high is None:
        return "—"
    return f"{r.k}/{r.n} {100 * r.rate:.0f} % ({100 * r.low:.0f}–{100 * r.high:.0f})"


def number(value: float | None, unit: str = "") -> str:
    return "—" if value is None else f"{value:.1f}{unit}"


HEADER = (
    "| variant | tasks | incorrect | automatic | partial | refused | resolved | takeover | rollback "
    "| rounds | steps | tokens in / out (cached) | cost / task | wall / task |\n"
    "|---|---:|---|---|---|---|---|---|---|---:|---:|---|---:|---:|"
)


def summary_row(s: Summary) -> str:
    t = s.tokens
    cells = [
        f"`{s.variant}`",
        str(s.tasks) + (f" (+{s.errors} not run)" if s.errors else ""),
        *(rate(s.classes[c]) for c in CLASSES),
        rate(s.resolved),
        rate(s.takeover),
        rate(s.rollback),
        number(s.rounds),
        number(s.steps),
        f"{t.input + t.cache_read + t.cache_write:,} / {t.output:,} ({percent(s.cached_share)})",
        money(s.usd_per_task),
        number(s.wall_s_per_task, " s"),
    ]
    return "| " + " | ".join(cells) + " |"


def task_row(r: TaskRecord) -> str:
    h = r.hidden
    f2p = f"{sum(s == 'pass' for s in h.fail_to_pass.values())}/{len(h.fail_to_pass)}" if h else "—"
    p2p = f"{sum(s == 'pass' for s in h.pass_to_pass.values())}/{len(h.pass_to_pass)}" if h else "—"
    outcome = r.outcome or f"error: {r.error}"
    notes = []
    if h and h.failing_on_base:
        notes.append("failing on the base commit: " + ", ".join(f"`{t}`" for t in h.failing_on_base))
    if h and h.unmatched:
        notes.append("unmatched: " + ", ".join(f"`{t}`" for t in h.unmatched))
    return (
        f"| `{r.instance_id}` | `{r.variant}` | **{r.klass}** | {outcome} | {f2p} | {p2p} | {r.steps} | {r.rounds} "
        f"| {money(r.usd)} | {r.wall_s:.1f} s | {'; '.join(notes) or '—'} |"
    )


def summary_tables(summaries: Sequence[Summary], tables: Sequence[Comparison]) -> list[str]:
    """One table per comparison, each headed by what it compares and what it holds fixed."""
    by_name = {s.variant: s for s in summaries}
    lines: list[str] = []
    for table in tables:
        lines += ["", f"## {table.title}", "", HEADER, *(summary_row(by_name[v]) for v in table.variants)]
    return lines


def markdown(
    name: str, summaries: Sequence[Summary], records: Sequence[TaskRecord], tables: Sequence[Comparison]
) -> str:
    tasks = len({r.instance_id for r in records})
    lines = [
        f"# ai-fix eval: {name}",
        "",
        f"{tasks} tasks, {len(summaries)} variants. Classes: **incorrect** (accepted, a hidden test fails), "
        "**automatic** (accepted, every hidden test passes), **partial** (not accepted; the branch passes the hidden "
        "tests or some of FAIL_TO_PASS), **refused** (not accepted, nothing of FAIL_TO_PASS passes). Rates are "
        "k/n with their 95 % Wilson interval; resolved = every hidden test passes, whatever ai-fix said; takeover = "
        "unverified, handed off or needing clarification; rounds = check rounds (run_checks and finish). Hidden "
        "tests apart: PASS_TO_PASS tests that fail on the base commit in the same environment (not counted against "
        "the change) and published ids that name no test in either run (unmatched, never counted as failing).",
    ]
    lines += summary_tables(summaries, tables)
    lines += ["", f"![Classes per variant]({CHART})", "", "## Runs", ""]
    lines.append(
        "| task | variant | class | ai-fix outcome | FAIL_TO_PASS | PASS_TO_PASS | steps | rounds | cost | wall "
        "| hidden tests apart |"
    )
    lines.append("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    lines += [task_row(r) for r in records]
    return "\n".join(lines) + "\n"


def chart(summaries: Sequence[Summary], path: Path) -> None:
    """Stacked bars, one per variant, of how many tasks fell in each class."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [s.variant for s in summaries][::-1]
    figure, axes = plt.subplots(figsize=(8, 1.2 + 0.6 * len(names)), dpi=120)
    left = [0] * len(names)
    for klass in CLASSES:
        counts = [s.classes[klass].k for s in summaries][::-1]
        bars = axes.barh(names, counts, left=left, color=COLOURS[klass], label=klass, height=0.6)
        axes.bar_label(bars, labels=[str(c) if c else "" for c in counts], label_type="center", color="white")
        left = [a + b for a, b in zip(left, counts)]
    axes.set_xlabel("tasks")
    axes.set_xlim(0, max([*left, 1]))
    axes.legend(ncols=len(CLASSES), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def write_report(
    out: Path,
    *,
    name: str,
    meta: dict[str, Any],
    summaries: Sequence[Summary],
    records: Sequence[TaskRecord],
    tables: Sequence[Comparison],
) -> None:
    document = {
        "name": name,
        "written": datetime.now(UTC).isoformat(timespec="seconds"),
        **meta,
        "comparisons": [{"title": t.title, "locked": t.locked, "variants": t.variants} for t in tables],
        "summary": [s.model_dump(mode="json") for s in summaries],
        "tasks": [r.model_dump(mode="json", by_alias=True) for r in records],
    }
    (out / "report.json").write_text(json.dumps(document, indent=1) + "\n")
    (out / "report.md").write_text(markdown(name, summaries, records, tables))
    chart(summaries, out / CHART)
