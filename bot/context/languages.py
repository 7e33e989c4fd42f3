"""Which tree-sitter grammar and tag query serve which file, by extension."""

from __future__ import annotations

from functools import cache
from importlib import resources

import tree_sitter
from tree_sitter_language_pack import get_language, get_parser

# extension -> (grammar in tree-sitter-language-pack, query file in queries/)
LANGUAGES: dict[str, tuple[str, str]] = {
    ".py": ("python", "python"),
    ".pyi": ("python", "python"),
    ".js": ("javascript", "javascript"),
    ".mjs": ("javascript", "javascript"),
    ".cjs": ("javascript", "javascript"),
    ".jsx": ("javascript", "javascript"),
    ".ts": ("typescript", "typescript"),
    ".mts": ("typescript", "typescript"),
    ".cts": ("typescript", "typescript"),
    ".tsx": ("tsx", "typescript"),
    ".go": ("go", "go"),
    ".rs": ("rust", "rust"),
    ".java": ("java", "java"),
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
    query_file = next(q for g, q in LANGUAGES.values() if g == grammar)
    source = resources.files("bot.context").joinpath("queries", f"{query_file}.scm").read_text()
    return tree_sitter.Query(get_language(grammar), source)  # type: ignore[arg-type]
