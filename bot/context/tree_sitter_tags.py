"""Tags of a file from tree-sitter captures, with its grammar's query from `queries/` (pure)."""

from __future__ import annotations

from collections import Counter

import tree_sitter

from bot.context.languages import parser_for, query_for
from bot.context.tags import Definition, FileTags, collect


def _definition(name_node: tree_sitter.Node, kind: str) -> Definition:
    node = name_node.parent or name_node
    return Definition(
        name=_text(name_node), kind=kind, start_line=node.start_point[0] + 1, end_line=node.end_point[0] + 1
    )


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _clean_import(text: str) -> str:
    return text.strip().strip("\"'`")


def tree_sitter_tags(source: bytes, grammar: str) -> FileTags:
    """Parse one file and collect its tags."""
    tree = parser_for(grammar).parse(source)
    captures = tree_sitter.QueryCursor(query_for(grammar)).captures(tree.root_node)
    definitions: list[Definition] = []
    module_paths: list[str] = []
    references: Counter[str] = Counter()
    docs: list[str] = []
    for capture, nodes in captures.items():
        if capture.startswith("definition."):
            definitions.extend(_definition(node, capture.partition(".")[2]) for node in nodes)
        elif capture == "reference":
            # Counted as bytes, decoded once per distinct name: most of a file's nodes are references.
            for raw, count in Counter(node.text for node in nodes).items():
                references[(raw or b"").decode("utf-8", "replace")] += count
        elif capture.startswith("import"):
            module_paths.extend(_clean_import(_text(node)) for node in nodes)
        elif capture == "doc":
            docs.extend(_text(node) for node in nodes)
    return collect(definitions, references, [], module_paths, "\n".join(docs))
