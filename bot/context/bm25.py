"""Okapi BM25 over posting lists (pure); shared by the index and the benchmark's baseline."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

K1 = 1.2
B = 0.75


def bm25_scores(
    query: Mapping[str, int],
    postings: Callable[[str], Mapping[int, float]],
    doc_len: Sequence[int],
    n_docs: int,
    total_len: int,
) -> dict[int, float]:
    """Score every document holding a query term; `postings(term)` maps doc id -> term frequency."""
    scores: dict[int, float] = {}
    if n_docs == 0:
        return scores
    avg_len = max(total_len / n_docs, 1.0)
    for term, query_tf in query.items():
        posting = postings(term)
        if not posting:
            continue
        df = len(posting)
        weight = math.log(1 + (n_docs - df + 0.5) / (df + 0.5)) * (1 + math.log(query_tf))
        for doc, tf in posting.items():
            norm = tf * (K1 + 1) / (tf + K1 * (1 - B + B * doc_len[doc] / avg_len))
            scores[doc] = scores.get(doc, 0.0) + weight * norm
    return scores
