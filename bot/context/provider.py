"""RepoContext: the ContextProvider the execution loop uses (index on disk, retrieval in memory)."""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

from bot.context.base import Query, Retrieved, Slice
from bot.context.graph import global_pagerank
from bot.context.index import Index
from bot.context.indexer import ParseMany, SyncReport, parse_many, sync
from bot.context.mentions import find_mentions
from bot.context.rank import FileHits, Ranked, direct_hits, rank_files
from bot.context.render import fit, render_map, render_slices
from bot.context.repo import RepoFiles
from bot.context.slices import choose_spans, merge
from bot.context.store import TagStore, cache_version, load_snapshot, save_snapshot
from bot.context.tags import Definition
from bot.context.terms import count_tokens, text_term_counts
from bot.errors import AiFixError
from bot.redact import redact

log = logging.getLogger(__name__)

RANKED_FILES = 100
"""Ranked files returned by `retrieve`; `rank` returns them all."""
SLICED_FILES = 12
"""Files whose slices are offered to the budget; the budget decides how many fit."""
SAVE_FROM = 20
"""Save the snapshot on refresh when at least this many files changed (smaller changes are cheap
to replay from the tag cache on the next start); `save()` saves regardless."""


def default_cache_dir(root: Path) -> Path:
    """Inside .git when there is one (never committed, removed with the clone), else the user cache."""
    if (root / ".git").is_dir():
        return root / ".git" / "ai-fix" / "context"
    return Path.home() / ".cache" / "ai-fix" / "context" / hashlib.sha1(str(root).encode()).hexdigest()[:16]


def repo_tag_cache(work_dir: Path, repo: str) -> Path:
    """One tag cache per repository under `work_dir`, shared by every job on it: tags are keyed by
    blob id, so a job on a fresh clone starts warm. `repo` is "owner/name" or a local path."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", repo.strip("/"))[-60:].strip("-.") or "repo"
    return work_dir / "context" / f"{slug}-{hashlib.sha1(repo.encode()).hexdigest()[:8]}" / "tags.sqlite"


def _outermost(definitions: list[Definition]) -> list[Definition]:
    out: list[Definition] = []
    for definition in definitions:
        if not out or definition.start_line > out[-1].end_line:
            out.append(definition)
    return out


class RepoContext:
    """Index of one working tree, kept up to date with `refresh()`; answers `retrieve` and `repo_map`."""

    def __init__(
        self,
        repo_path: str | Path,
        cache_dir: str | Path | None = None,
        *,
        tag_cache: str | Path | None = None,
        parse: ParseMany = parse_many,
    ):
        """`cache_dir` holds this working tree's index snapshot, and the tag cache unless `tag_cache`
        names another (a file any number of working trees of the repository may share at once)."""
        self.root = Path(repo_path).resolve()
        if not self.root.is_dir():
            raise AiFixError(f"{self.root} is not a directory; pass the path of a repository checkout")
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir(self.root)
        self._version = cache_version()
        self._store = TagStore(
            Path(tag_cache) if tag_cache is not None else self.cache_dir / "tags.sqlite", self._version
        )
        self._parse = parse
        self._snapshot = self.cache_dir / "index.marshal"
        self.index, listing = load_snapshot(self._snapshot, self._version) or (Index(), None)
        self._files = RepoFiles(self.root, listing)
        self._saved_version = self.index.version
        self._centrality: tuple[int, dict[int, float]] | None = None
        self.last_sync = self.refresh()

    # ---- ContextProvider -----------------------------------------------------------------

    def refresh(self) -> SyncReport:
        """Re-index files changed since the last call (by mtime and size, then blob id)."""
        self.index, report = sync(self.index, self._files, self._store, self._parse)
        if report.parsed + report.reused + report.removed >= SAVE_FROM:
            self.save()
        self.last_sync = report
        return report

    def repo_map(self, budget_tokens: int) -> str:
        """Files by centrality (global PageRank), each with its top-level definitions, fitted to the budget."""
        index = self.index
        centrality = self._global_rank()
        order = sorted(index.files.live(), key=lambda fid: (-centrality.get(fid, 0.0), str(index.files.paths[fid])))
        entries = [(str(index.files.paths[fid]), _outermost(index.files.file_definitions(fid))) for fid in order]
        _, text = fit(entries, render_map, budget_tokens)
        return redact(text)

    def retrieve(self, query: Query, budget_tokens: int) -> Retrieved:
        return self.explain(query, budget_tokens)[1]

    # ---- beyond the protocol -------------------------------------------------------------

    def rank(self, query: Query) -> list[Ranked]:
        """Ranked files with each signal's share (for debugging and the benchmark)."""
        return self._rank(query)[0]

    def explain(self, query: Query, budget_tokens: int) -> tuple[list[Ranked], Retrieved]:
        """What `retrieve` returns, with every ranked file's signals beside it (one ranking for both)."""
        ranked, hits, terms = self._rank(query)
        slices = self._slices(ranked[:SLICED_FILES], hits, terms)
        count, text = fit(slices, render_slices, budget_tokens)
        rendered = redact(text)
        retrieved = Retrieved(
            files=[(str(self.index.files.paths[r.fid]), round(r.score, 6)) for r in ranked[:RANKED_FILES]],
            slices=slices[:count],
            rendered=rendered,
            tokens=count_tokens(rendered),
        )
        return ranked, retrieved

    def save(self) -> None:
        if self.index.version != self._saved_version or not self._snapshot.exists():
            save_snapshot(self._snapshot, self._version, self.index, self._files.listing_state())
            self._saved_version = self.index.version

    def close(self) -> None:
        self.save()
        self._store.close()

    # ---- internals -----------------------------------------------------------------------

    def _rank(self, query: Query) -> tuple[list[Ranked], dict[int, FileHits], dict[str, int]]:
        mentions = find_mentions(query.text, query.failure, query.diff)
        hits = direct_hits(self.index, mentions)
        terms = text_term_counts(mentions.words)
        return rank_files(self.index, terms, hits), hits, terms

    def _global_rank(self) -> dict[int, float]:
        if self._centrality is None or self._centrality[0] != self.index.version:
            self._centrality = (self.index.version, global_pagerank(self.index.files.live(), self.index.neighbours))
        return self._centrality[1]

    def _slices(self, ranked: list[Ranked], hits: dict[int, FileHits], terms: dict[str, int]) -> list[Slice]:
        index = self.index
        mentioned = {name for h in hits.values() for name in h.names}
        paths = [str(index.files.paths[r.fid]) for r in ranked]
        dates = self._files.last_commit_dates(paths)
        slices: list[Slice] = []
        for r, path in zip(ranked, paths):
            try:
                lines = self._files.read(path).decode("utf-8", "replace").splitlines()
            except OSError:
                continue
            file_hits = hits.get(r.fid)
            own = file_hits.names if file_hits else set()
            spans = choose_spans(
                lines,
                index.files.file_definitions(r.fid),
                file_hits.frames if file_hits else [],
                own,
                mentioned - own,
                terms,
            )
            for span in merge(spans):
                slices.append(
                    Slice(
                        path=path,
                        start_line=span.start,
                        end_line=span.end,
                        blob=index.files.blobs[r.fid],
                        last_commit_date=dates.get(path, ""),
                        reason=span.reason,
                        text=redact("\n".join(lines[span.start - 1 : span.end])),
                    )
                )
        return slices
