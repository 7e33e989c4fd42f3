"""Which grammar serves which file, by extension, and for tree-sitter's grammars their tag query."""

from __future__ import annotations

from functools import cache
from importlib import resources

import tree_sitter
from tree_sitter_language_pack import get_language, get_parser

_JS = ("ecmascript", "javascript")
_TS = ("ecmascript", "typescript")
# extension -> (grammar, query files in queries/ joined in order); Python is read without tree-sitter (python_tags)
LANGUAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    ".py": ("python", ()),
    ".pyi": ("python", ()),
    ".js": ("javascript", _JS),
    ".mjs": ("javascript", _JS),
    ".cjs": ("javascript", _JS),
    ".jsx": ("javascript", _JS),
    ".ts": ("typescript", _TS),
    ".mts": ("typescript", _TS),
    ".cts": ("typescript", _TS),
    ".tsx": ("tsx", _TS),
    ".go": ("go", ("go",)),
    ".rs": ("rust", ("rust",)),
    ".java": ("java", ("java",)),
}


def grammar_for(path: str) -> str | None:
    """The grammar name for a path, or None when no tag query covers it."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    entry = LANGUAGES.get(path[dot:].lower())
    return entry[0] if entry else None


@cache
def parser_for(grammar: str) -> tree_sitter.Parser:
    return get_parser(grammar)  # type: ignore[arg-type]


@cache
def query_for(grammar: str) -> tree_sitter.Query:
    query_files = next(q for g, q in LANGUAGES.values() if g == grammar)
    queries = resources.files("bot.context").joinpath("queries")
    source = "\n".join(queries.joinpath(f"{name}.scm").read_text() for name in query_files)
    return tree_sitter.Query(get_language(grammar), source)  # type: ignore[arg-type]
