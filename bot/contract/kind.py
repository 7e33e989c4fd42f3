"""What kind of task an issue is (a bug or a feature). Pure functions over sanitised text.

The kind decides one rule of the evidence: a test that cannot even be collected before the change
(it imports a name that does not exist yet) shows new behaviour, never that a bug was fixed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.contract.evidence import ERROR_MESSAGE, EXPECTED_ACTUAL, FAILING_COMMAND, TRACEBACK
from bot.contract.models import TaskKind

_BUG_WORDS = re.compile(r"\b(bug|defect|regression|crash\w*|broken|fix)\b", re.I)
_FEATURE_WORDS = re.compile(r"\b(feature|enhancement|new|request|proposal|improvement)\b", re.I)
_DEFECT_TEXT = re.compile(
    r"\b(bug|crash(?:es|ed)?|wrong|incorrect|broken|regression|instead of|fails?|failing|raises|exception"
    r"|does(?:n't| not) work)\b",
    re.I,
)
DEFECT_EVIDENCE = (TRACEBACK, ERROR_MESSAGE, FAILING_COMMAND, EXPECTED_ACTUAL)


def task_kind(labels: Sequence[str], section: str, evidence: Sequence[str], text: str) -> tuple[TaskKind, str]:
    """(kind, where it came from): the labels first, then a `## Kind` section, then what the issue shows."""
    for label in labels:
        if _BUG_WORDS.search(label):
            return "bug", f"label {label!r}"
        if _FEATURE_WORDS.search(label):
            return "feature", f"label {label!r}"
    if section:
        if _BUG_WORDS.search(section):
            return "bug", "issue ## Kind"
        if _FEATURE_WORDS.search(section):
            return "feature", "issue ## Kind"
    if any(kind in DEFECT_EVIDENCE for kind in evidence) or _DEFECT_TEXT.search(text):
        return "bug", "the issue describes a defect"
    return "feature", "the issue asks for behaviour and shows no defect"
