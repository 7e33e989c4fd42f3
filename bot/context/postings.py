"""The index's term postings: which files hold each search term how often, scored by BM25 (no I/O)."""

from __future__ import annotations

from typing import Any

from bot.context.bm25 import bm25_scores
from bot.context.packed import PackedMap
from bot.context.tags import FileTags
from bot.context.terms import path_terms

PATH_WEIGHT = 4
"""A word in a file's path is worth this many occurrences in its body."""


def file_terms(path: str, tags: FileTags) -> dict[str, int]:
    terms = dict(tags.terms)
    for term in path_terms(path):
        terms[term] = terms.get(term, 0) + PATH_WEIGHT
    return terms


class TermPostings:
    def __init__(self, state: tuple[Any, ...] | None = None) -> None:
        """Empty, or as `to_state` left it."""
        doc_len, total_len, postings = state or ([], 0, None)
        self.doc_len: list[int] = doc_len
        """Terms per file id."""
        self.total_len: int = total_len
        self.postings: PackedMap[str] = PackedMap("I", postings)
        """term -> {file: frequency}"""

    def add(self, fid: int, path: str, tags: FileTags) -> None:
        if fid == len(self.doc_len):
            self.doc_len.append(0)
        terms = file_terms(path, tags)
        self.postings.set_column(fid, terms.items())
        self.doc_len[fid] = sum(terms.values())
        self.total_len += self.doc_len[fid]

    def remove(self, fid: int, path: str, tags: FileTags) -> None:
        """Drop the terms `path` was added with (`tags`)."""
        for term in file_terms(path, tags):
            self.postings.edit(term).pop(fid, None)
        self.total_len -= self.doc_len[fid]
        self.doc_len[fid] = 0

    def bm25(self, query: dict[str, int], n_docs: int) -> dict[int, float]:
        return bm25_scores(query, self.postings.get, self.doc_len, n_docs, self.total_len)

    def to_state(self) -> tuple[Any, ...]:
        return self.doc_len, self.total_len, self.postings.flat()
