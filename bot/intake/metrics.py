"""Prometheus text for /metrics: deliveries by event and outcome, quarantined ones, jobs by state, CI rounds and
re-runs, cost and outcomes per repository, the queue's depth and oldest job, acknowledgement latency."""

from __future__ import annotations

import bisect
import gc
from collections import Counter
from dataclasses import dataclass, field

from bot.queue.health import QueueFigures
from bot.vocabulary import UNVERIFIED_EVENT

BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds; GitHub gives up after 10 s."""


LABELLED_EVENTS = frozenset(
    {
        "ping",
        "issues",
        "issue_comment",
        "pull_request_review",
        "pull_request_review_comment",
        "installation",
        "installation_repositories",
        "check_run",
        "check_suite",
        "workflow_run",
        "status",
        "push",
        UNVERIFIED_EVENT,
    }
)
"""Events counted under their own name; the rest under "other", so made-up names cannot grow /metrics."""


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass(frozen=True)
class CiCounts:
    """What ai-fix did about its pull requests' CI, from the jobs' history (so it survives restarts)."""

    rounds: dict[str, int] = field(default_factory=dict)
    """CI rounds by their outcome (accepted, unverified, handed_off, failed...)."""
    reruns: int = 0
    flaky: int = 0

    def lines(self) -> list[str]:
        out = [
            "# HELP aifix_ci_rounds_total Rounds started by a failing CI check, by outcome.",
            "# TYPE aifix_ci_rounds_total counter",
        ]
        out += [f'aifix_ci_rounds_total{{outcome="{_label(k)}"}} {n}' for k, n in sorted(self.rounds.items())]
        out += [
            "# HELP aifix_ci_reruns_total Re-runs of failed workflow jobs ai-fix asked for, and those that then passed.",
            "# TYPE aifix_ci_reruns_total counter",
            f'aifix_ci_reruns_total{{result="requested"}} {self.reruns}',
            f'aifix_ci_reruns_total{{result="flaky"}} {self.flaky}',
        ]
        return out


class Metrics:
    """In-process counters, updated from the event loop thread only."""

    def __init__(self) -> None:
        self.deliveries: Counter[tuple[str, str]] = Counter()
        self._bucket_counts = [0] * (len(BUCKETS) + 1)
        self._sum = 0.0
        self._count = 0

    def observe(self, event: str, outcome: str, seconds: float) -> None:
        self.deliveries[(event if event in LABELLED_EVENTS else "other", outcome)] += 1
        self._bucket_counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self._sum += seconds
        self._count += 1

    def render(self, jobs: dict[tuple[str, str], int], figures: QueueFigures, ci: CiCounts | None = None) -> str:
        lines = [
            "# HELP aifix_deliveries_total Webhook deliveries by event and outcome.",
            "# TYPE aifix_deliveries_total counter",
        ]
        for (event, outcome), n in sorted(self.deliveries.items()):
            lines.append(f'aifix_deliveries_total{{event="{_label(event)}",outcome="{_label(outcome)}"}} {n}')
        lines += [
            "# HELP aifix_deliveries_quarantined Stored deliveries whose meaning failed to apply repeatedly, set aside.",
            "# TYPE aifix_deliveries_quarantined gauge",
            f"aifix_deliveries_quarantined {figures.quarantined}",
        ]
        lines += ["# HELP aifix_jobs Jobs in the store by kind and status.", "# TYPE aifix_jobs gauge"]
        for (kind, status), n in sorted(jobs.items()):
            lines.append(f'aifix_jobs{{kind="{_label(kind)}",status="{_label(status)}"}} {n}')
        lines += (ci or CiCounts()).lines()
        lines += [
            "# HELP aifix_cost_usd_total Dollars the finished jobs of each repository recorded for their model calls.",
            "# TYPE aifix_cost_usd_total counter",
        ]
        for repo, usd in sorted(figures.cost_by_repo.items()):
            lines.append(f'aifix_cost_usd_total{{repo="{_label(repo)}"}} {usd:.6f}')
        lines += [
            "# HELP aifix_outcomes_total Jobs that ended, by repository and outcome.",
            "# TYPE aifix_outcomes_total counter",
        ]
        for (repo, outcome), n in sorted(figures.outcomes.items()):
            lines.append(f'aifix_outcomes_total{{repo="{_label(repo)}",outcome="{_label(outcome)}"}} {n}')
        lines += [
            "# HELP aifix_queue_depth Jobs queued, waiting for a worker (or for a limit).",
            "# TYPE aifix_queue_depth gauge",
            f"aifix_queue_depth {figures.queued}",
            "# HELP aifix_queue_oldest_seconds Age of the oldest queued job (0 when none is queued).",
            "# TYPE aifix_queue_oldest_seconds gauge",
            f"aifix_queue_oldest_seconds {figures.oldest_queued_seconds:.3f}",
        ]
        lines += [
            "# HELP aifix_ack_seconds Time from request start to the webhook's answer.",
            "# TYPE aifix_ack_seconds histogram",
        ]
        cumulative = 0
        for bound, n in zip(BUCKETS, self._bucket_counts):
            cumulative += n
            lines.append(f'aifix_ack_seconds_bucket{{le="{bound}"}} {cumulative}')
        lines.append(f'aifix_ack_seconds_bucket{{le="+Inf"}} {self._count}')
        lines.append(f"aifix_ack_seconds_sum {self._sum}")
        lines.append(f"aifix_ack_seconds_count {self._count}")
        lines += [
            "# HELP aifix_gc_collections_total CPython garbage collections by generation (2: full, which pause every request).",
            "# TYPE aifix_gc_collections_total counter",
        ]
        for generation, stats in enumerate(gc.get_stats()):
            lines.append(f'aifix_gc_collections_total{{generation="{generation}"}} {stats["collections"]}')
        lines += [
            "# HELP aifix_gc_frozen_objects Objects of the start-up heap moved out of the collector's reach (gc.freeze).",
            "# TYPE aifix_gc_frozen_objects gauge",
            f"aifix_gc_frozen_objects {gc.get_freeze_count()}",
        ]
        return "\n".join(lines) + "\n"
