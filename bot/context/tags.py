"""A file's tags (definitions, references, imports, searchable terms) and how they are put together (pure).

The readers that find them: `python_tags` (Python, from its tokens) and `tree_sitter_tags` (every other
language, from tree-sitter captures); `extract` picks one by grammar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from bot.context.terms import identifier_terms, text_term_counts

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


_WORD = re.compile(r"[A-Za-z_]\w*")


def collect(
    definitions: list[Definition],
    references: dict[str, int],
    member_imports: list[str],
    module_paths: list[str],
    docs: str,
) -> FileTags:
    """A file's tags from what a reader found: its definitions, the identifiers its code uses (counted),
    the modules it imports by member (`a.b.c` for `from a.b import c`) and by path as written, and its
    comments and string literals (`docs`, one text)."""
    # The words of a module path (`django` in `from django.db import models`) name no definition:
    # counted as uses, they would link every importer to whatever defines a method `django`.
    for path in module_paths:
        for word in _WORD.findall(path):
            if references.get(word, 0) > 1:
                references[word] -= 1
            else:
                references.pop(word, None)
    definitions.sort(key=lambda d: (d.start_line, d.name))
    terms = text_term_counts(docs)
    for name, count in references.items():
        for term in identifier_terms(name):
            terms[term] = terms.get(term, 0) + count
    for definition in definitions:
        for term in identifier_terms(definition.name):
            terms[term] = terms.get(term, 0) + DEFINITION_WEIGHT
    imports = tuple(dict.fromkeys([*member_imports, *module_paths]))
    return FileTags(tuple(definitions), dict(references), imports, terms)
