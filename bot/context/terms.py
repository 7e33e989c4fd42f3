"""Turning identifiers, paths and prose into search terms, and text into a token count (pure)."""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from importlib import resources

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# camelCase / PascalCase / ACRONYMWords / digits boundaries
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
CHARS_PER_TOKEN = 3.2
"""Code tokenizes denser than prose; a low ratio over-counts, so a fitted context never overflows."""


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    text = resources.files("bot.context").joinpath("stopwords.txt").read_text()
    return frozenset(w for line in text.splitlines() if (w := line.strip()) and not w.startswith("#"))


def singular(word: str) -> str:
    """A light English stemmer for plurals: `fields` and `field`, `queries` and `query` meet."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# Every parse worker fills its own: 8,192 names keep nearly all its hits (a Django index: 1.77 s of CPU
# against 1.73 s with 65,536) for 8 MB instead of 29.
@lru_cache(maxsize=8192)
def identifier_terms(name: str) -> tuple[str, ...]:
    """`get_user_name`, `getUserName` -> the whole name lower-cased plus its parts, plurals made singular."""
    stop = stopwords()
    whole = name.lower().strip("_")
    parts = [p.lower() for p in _PART.findall(name)]
    out = [singular(whole)] if len(whole) > 1 and whole not in stop else []
    if len(parts) > 1:
        out.extend(singular(p) for p in parts if len(p) > 1 and p not in stop and p != whole)
    return tuple(out)


def text_term_counts(text: str) -> dict[str, int]:
    """Search terms of free text, counted: every identifier-like word, split like code identifiers (each
    distinct word split once: a file's prose repeats its words)."""
    counts: dict[str, int] = {}
    for word, count in Counter(_WORD.findall(text)).items():
        for term in identifier_terms(word):
            counts[term] = counts.get(term, 0) + count
    return counts


def path_terms(path: str) -> list[str]:
    """Directory and file names of a path, split like identifiers (extension dropped)."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return [t for part in re.split(r"[/\\.\-]+", stem) for t in identifier_terms(part)]


def count_tokens(text: str) -> int:
    """An upper estimate of model tokens, without a tokenizer."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
