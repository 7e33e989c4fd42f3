"""Chores: upkeep ai-fix does on a repository by itself, run by the pool's chore worker (see `ChoreKind`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from bot.github.client import Refused, RepoClient, calling
from bot.labels import Label

log = logging.getLogger(__name__)


def create_label(client: RepoClient, label: Label) -> bool:
    """Create the label; False when the repository has one of that name already (GitHub's names ignore case).

    Refused (403, 404) when the repository will not have it made: archived, or out of the App's reach."""
    try:
        with calling(f"POST label {label.name!r} in {client.repo}", handled=(403, 404, 422)):
            client.rest.rest.issues.create_label(
                client.owner, client.name, name=label.name, color=label.color, description=label.description
            )
    except Refused as exc:
        if exc.status == 422 and "already_exists" in exc.message:
            return False
        raise
    return True


def make_labels(client: RepoClient, labels: Iterable[Label]) -> str:
    """Create the labels the repository lacks; what was made, for the job's reason.

    A repository that will not have them made (archived, out of the App's reach) is logged and left: the
    labels are a convenience, and a person can still type their names.
    """
    made: list[str] = []
    present: list[str] = []
    refused: list[str] = []
    for label in labels:
        try:
            (made if create_label(client, label) else present).append(label.name)
        except Refused as exc:
            refused.append(f"{label.name} ({exc.status} {exc.message})")
    said = [f"created {', '.join(made)}" if made else "created none", f"{len(present)} were there"]
    if refused:
        log.warning(
            "%s: GitHub refused to create the labels %s; create them by hand, or check the App's access to it",
            client.repo,
            "; ".join(refused),
        )
        said.append(f"refused: {'; '.join(refused)}")
    return "; ".join(said)
