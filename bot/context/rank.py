"""Ranking files for a query, no model call: words, names, graph proximity, tests' subjects (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.context.graph import personalised_pagerank
from bot.context.imports import resolve
from bot.context.index import Index
from bot.context.mentions import Frame, Mentions
from bot.context.subjects import is_test_path, subjects

# Weights of the signals, each in [0, 1]. Chosen on the localization benchmark (bench/localize.py):
# lexical search carries most of the weight; names in the issue and the graph add a few points each.
LEXICAL = 1.0
DIRECT = 0.5
GRAPH = 0.25
CERTAIN = 2.0
"""A file named outright (traceback frame, path, diff) outweighs any lexical match."""
DIRECT_HALF = 2.0
"""The hit score that maps to half of a signal's weight (a traceback frame scores 2)."""
PATH_HIT = 3.0
BASENAME_HIT = 1.5
FRAME_HIT = 2.0
FRAME_DECAY = 0.5
MODULE_HIT = 1.0
DIFF_HIT = 2.0
STEM_HIT = 1.5
"""A word that is a module's file name (`sqlmigrate`, `deletion`)."""
MIN_STEM = 4
RARE_STEM = 0.01
"""Only a file name used in at most this share of files counts (`sqlmigrate`, not `message`)."""
MAX_STEM_FILES = 3
SYMBOL_TAIL = 0.2
MAX_SYMBOL_DEFINERS = 20
"""A mentioned name defined in more files than this points nowhere in particular."""
LEXICAL_SEEDS = 5
"""Without direct hits, the best lexical matches seed the graph walk."""
SUBJECT = 0.5
"""Weight of being the subject of the best-matching tests (bench/localize.py: in a sweep of an
earlier form of this signal any weight from 0.1 to 1 scored the same on the tuning half; 0.5 is the
middle of that range)."""
SUBJECT_TESTS = 30
"""How many of the best-ranked test files lend their rank to their subjects."""


@dataclass
class FileHits:
    score: float = 0.0
    """From names: symbols, modules and file names mentioned."""
    certain: float = 0.0
    """From the file itself being named: traceback frames, paths, the current diff."""
    frames: list[Frame] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    """Mentioned names this file defines."""
    reasons: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Ranked:
    fid: int
    score: float
    lexical: float
    direct: float
    certain: float
    graph: float
    subject: float
    """Being the file that the best-matching tests test."""


def _path_matches(index: Index, mentioned: str) -> tuple[list[int], bool]:
    """Files a mentioned path means: (ids, exact); exact when the whole mention is a path suffix."""
    clean = mentioned.strip("./").replace("\\", "/")
    segments = clean.split("/")
    best: list[int] = []
    best_len = 0
    for fid in index.by_basename().get(segments[-1], []):
        path = index.files.paths[fid]
        assert path is not None
        own = path.split("/")
        common = 0
        while common < min(len(own), len(segments)) and own[-1 - common] == segments[-1 - common]:
            common += 1
        if common > best_len:
            best, best_len = [fid], common
        elif common == best_len:
            best.append(fid)
    exact = best_len == len(segments) or (best_len >= 2 and len(best) == 1)
    return best, exact


def _hit(hits: dict[int, FileHits], fid: int, score: float, reason: str, certain: bool = False) -> FileHits:
    entry = hits.setdefault(fid, FileHits())
    if certain:
        entry.certain += score
    else:
        entry.score += score
    if reason not in entry.reasons:
        entry.reasons.append(reason)
    return entry


def _named_paths(index: Index, mentions: Mentions, hits: dict[int, FileHits]) -> None:
    for mentioned in mentions.paths:
        found, exact = _path_matches(index, mentioned)
        full_path = exact and "/" in mentioned.strip("/")
        for fid in found:
            _hit(hits, fid, (PATH_HIT if full_path else BASENAME_HIT) / len(found), "named in the issue", full_path)


def _traceback_frames(index: Index, mentions: Mentions, hits: dict[int, FileHits]) -> None:
    in_repo = []
    for frame in mentions.frames:
        found, exact = _path_matches(index, frame.path)
        if exact and len(found) == 1:
            in_repo.append((frame, found[0]))
    deepest = max((frame.depth for frame, _ in in_repo), default=0)
    for frame, fid in in_repo:
        # The repository's frame nearest the raise point is the likeliest place of the fault.
        entry = _hit(hits, fid, FRAME_HIT * FRAME_DECAY ** (deepest - frame.depth), "traceback frame", True)
        entry.frames.append(frame)


def _changed_and_modules(index: Index, mentions: Mentions, hits: dict[int, FileHits]) -> None:
    for path in mentions.diff_paths:
        changed = index.files.file_id(path)
        if changed is not None:
            _hit(hits, changed, DIFF_HIT, "changed in the current diff", True)
    keys = index.module_keys()
    for dotted in mentions.dotted:
        for fid in resolve(dotted, "", "python", keys) or resolve(dotted.lower(), "", "python", keys):
            _hit(hits, fid, MODULE_HIT, "module named in the issue")


def _named_symbols(index: Index, mentions: Mentions, hits: dict[int, FileHits]) -> None:
    stems = index.by_stem()
    rare = max(1, int(index.files.live_count * RARE_STEM))
    symbols: dict[int, list[float]] = {}
    for name, certainty in mentions.names.items():
        definers = index.names.definers.get(name)
        same_stem = stems.get(name, []) if len(name) >= MIN_STEM else []
        # A module named after a name it defines (`refine` in refine.py) is that name's home,
        # however common the word is elsewhere.
        home = [fid for fid in same_stem if fid in definers]
        if len(home) > MAX_STEM_FILES:
            home = []
        if home or (0 < len(same_stem) <= MAX_STEM_FILES and len(index.terms.postings.get(name.lower())) <= rare):
            for fid in home or same_stem:
                _hit(hits, fid, STEM_HIT * certainty / len(home or same_stem), "module named in the issue")
        if not definers or len(definers) > MAX_SYMBOL_DEFINERS:
            continue
        for fid in definers:
            symbols.setdefault(fid, []).append(certainty / len(definers))
            _hit(hits, fid, 0.0, "defines a name in the issue").names.add(name)
    for fid, weights in symbols.items():
        # The most specific name decides; more names add a little (a big file defines many).
        weights.sort(reverse=True)
        hits[fid].score += weights[0] + SYMBOL_TAIL * sum(weights[1:])


def direct_hits(index: Index, mentions: Mentions) -> dict[int, FileHits]:
    """The files an issue points at by itself: paths it names, traceback frames, the current diff, modules
    and names it mentions."""
    hits: dict[int, FileHits] = {}
    _named_paths(index, mentions, hits)
    _traceback_frames(index, mentions, hits)
    _changed_and_modules(index, mentions, hits)
    _named_symbols(index, mentions, hits)
    return hits


def _scaled(scores: dict[int, float]) -> dict[int, float]:
    top = max(scores.values(), default=0.0)
    return {k: v / top for k, v in scores.items()} if top > 0 else {}


def rank_files(index: Index, terms: dict[str, int], hits: dict[int, FileHits]) -> list[Ranked]:
    """Every file with any signal, best first."""
    lexical = _scaled(index.bm25(terms))
    # Not scaled by the best file: a lone weak hit (one prose word) must stay weak.
    direct = {fid: h.score / (h.score + DIRECT_HALF) for fid, h in hits.items() if h.score > 0}
    certain = {fid: h.certain / (h.certain + DIRECT_HALF) for fid, h in hits.items() if h.certain > 0}
    seeds = {fid: direct.get(fid, 0.0) + certain.get(fid, 0.0) for fid in set(direct) | set(certain)}
    if not seeds:
        seeds = dict(sorted(lexical.items(), key=lambda kv: -kv[1])[:LEXICAL_SEEDS])
    graph = _scaled(personalised_pagerank(seeds, index.neighbours))
    first = {
        fid: LEXICAL * lexical.get(fid, 0.0)
        + DIRECT * direct.get(fid, 0.0)
        + CERTAIN * certain.get(fid, 0.0)
        + GRAPH * graph.get(fid, 0.0)
        for fid in set(lexical) | set(direct) | set(certain) | set(graph)
        if index.files.paths[fid] is not None
    }
    best = max(first.values(), default=0.0) or 1.0
    tests = sorted(
        (fid for fid in first if is_test_path(str(index.files.paths[fid]))),
        key=lambda fid: (-first[fid], index.files.paths[fid]),
    )
    tested = subjects(index, [(fid, first[fid] / best) for fid in tests[:SUBJECT_TESTS]])
    ranked = [
        Ranked(
            fid,
            first.get(fid, 0.0) + SUBJECT * tested.get(fid, 0.0),
            lexical.get(fid, 0.0),
            direct.get(fid, 0.0),
            certain.get(fid, 0.0),
            graph.get(fid, 0.0),
            tested.get(fid, 0.0),
        )
        for fid in set(first) | set(tested)
    ]
    ranked.sort(key=lambda r: (-r.score, index.files.paths[r.fid]))
    return ranked
