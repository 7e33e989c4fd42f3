"""A file's tags by its grammar: Python read from its tokens, every other language parsed by tree-sitter (pure)."""

from __future__ import annotations

from bot.context.python_tags import python_tags
from bot.context.tags import FileTags
from bot.context.tree_sitter_tags import tree_sitter_tags


def extract_tags(source: bytes, grammar: str) -> FileTags:
    return python_tags(source) if grammar == "python" else tree_sitter_tags(source, grammar)
