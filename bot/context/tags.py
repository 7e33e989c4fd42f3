"""Tag extraction: definitions, references, imports and searchable terms of one file (pure)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import tree_sitter

from bot.context.languages import parser_for, query_for
from bot.context.terms import identifier_terms, text_terms

DEFINITION_WEIGHT = 3
"""A name defined in a file says more about the file than a name it merely uses."""


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    kind: str
    """class, function, method, type, interface, enum, constant, module, macro."""
    start_line: int
    end_line: int
    """1-based, inclusive; decorators belong to what they decorate."""


# Plain dataclasses, not pydantic: a large repository holds millions of these and they are
# marshalled to the cache as tuples; validation would cost more than the parse.
@dataclass(frozen=True, slots=True)
class FileTags:
    definitions: tuple[Definition, ...] = ()
    references: dict[str, int] = field(default_factory=dict)
    """Identifier -> occurrences (definitions included)."""
    imports: tuple[str, ...] = ()
    """Module paths as written, e.g. `django.db.models`, `.utils`, `./api`, `crate::io`."""
    terms: dict[str, int] = field(default_factory=dict)
    """Lower-case search terms from identifiers, definitions, comments and string literals."""

    def to_tuple(self) -> tuple[Any, ...]:
        return (
            tuple((d.name, d.kind, d.start_line, d.end_line) for d in self.definitions),
            self.references,
            self.imports,
            self.terms,
        )

    @classmethod
    def from_tuple(cls, data: tuple[Any, ...]) -> FileTags:
        defs, refs, imports, terms = data
        return cls(tuple(Definition(*d) for d in defs), refs, tuple(imports), terms)


def _definition(name_node: tree_sitter.Node, kind: str) -> Definition:
    node = name_node.parent or name_node
    if node.type == "assignment" and node.parent is not None:
        node = node.parent
    if node.parent is not None and node.parent.type == "decorated_definition":
        node = node.parent
    return Definition(
        name=_text(name_node), kind=kind, start_line=node.start_point[0] + 1, end_line=node.end_point[0] + 1
    )


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _python_member_import(member: tree_sitter.Node) -> str:
    """`from a.b import c` also names module `a.b.c`, which may be a file of its own."""
    statement = member.parent
    while statement is not None and statement.type != "import_from_statement":
        statement = statement.parent
    module = statement.child_by_field_name("module_name") if statement is not None else None
    base = _text(module) if module is not None else ""
    return f"{base}{_text(member)}" if base.endswith(".") else f"{base}.{_text(member)}"


_WORD = re.compile(r"[A-Za-z_]\w*")


def _clean_import(text: str) -> str:
    return text.strip().strip("\"'`")


def extract_tags(source: bytes, grammar: str) -> FileTags:
    """Parse one file and collect its tags with the grammar's query from `queries/`."""
    tree = parser_for(grammar).parse(source)
    captures = tree_sitter.QueryCursor(query_for(grammar)).captures(tree.root_node)
    definitions: list[Definition] = []
    imports: list[str] = []
    module_paths: list[str] = []
    references: Counter[str] = Counter()
    terms: Counter[str] = Counter()
    for capture, nodes in captures.items():
        if capture.startswith("definition."):
            definitions.extend(_definition(node, capture.partition(".")[2]) for node in nodes)
        elif capture == "reference":
            # Counted as bytes, decoded once per distinct name: most of a file's nodes are references.
            for raw, count in Counter(node.text for node in nodes).items():
                references[(raw or b"").decode("utf-8", "replace")] += count
        elif capture == "import.member":
            imports.extend(_python_member_import(node) for node in nodes)
        elif capture.startswith("import"):
            module_paths.extend(_clean_import(_text(node)) for node in nodes)
        elif capture == "doc":
            for node in nodes:
                terms.update(text_terms(_text(node)))
    imports.extend(module_paths)
    # The words of a module path (`django` in `from django.db import models`) name no definition:
    # counted as uses, they would link every importer to whatever defines a method `django`.
    for path in module_paths:
        for word in _WORD.findall(path):
            if references.get(word, 0) > 1:
                references[word] -= 1
            else:
                references.pop(word, None)
    definitions.sort(key=lambda d: (d.start_line, d.name))
    for name, count in references.items():
        for term in identifier_terms(name):
            terms[term] += count
    for definition in definitions:
        for term in identifier_terms(definition.name):
            terms[term] += DEFINITION_WEIGHT
    return FileTags(tuple(definitions), dict(references), tuple(dict.fromkeys(imports)), dict(terms))
