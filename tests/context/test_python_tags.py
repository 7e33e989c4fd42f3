"""Python read from its tokens: the definitions, imports and names a parser finds, on tricky layouts and real projects."""

from __future__ import annotations

import ast
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.context.python_tags import python_tags
from bot.context.tags import FileTags
from tests.support.pypi_releases import DJANGO, RELEASES, fetch

ROOT = Path(__file__).resolve().parents[2]


def spans(tags: FileTags) -> dict[str, tuple[str, int, int]]:
    return {d.name: (d.kind, d.start_line, d.end_line) for d in tags.definitions}


def test_a_definition_runs_to_the_next_statement_at_its_indentation_whatever_lies_between() -> None:
    source = b"""import os


@register(
    name="first",
)
@cache
def first(
    a,
    b,
):
    query = '''
SELECT *
FROM t
'''.strip()
    rows = call(a,
b)
    return query, \\
rows
    # kept: indented deeper than the definition


# not kept: a comment at the definition's indentation
class Shop:
    async def total(self): return 1

    def nested(self):
        def inner():
            pass
        return inner
    # kept by the class, not by `nested`


LIMIT: int = 3
NAMES = [
'a',
'b',
]  # one statement
"""
    assert spans(python_tags(source)) == {
        "first": ("function", 4, 20),
        "Shop": ("class", 24, 31),
        "total": ("function", 25, 25),
        "nested": ("function", 27, 30),
        "inner": ("function", 28, 29),
        "LIMIT": ("constant", 34, 34),
        "NAMES": ("constant", 35, 38),
    }


def test_strings_and_comments_are_prose_to_search_not_code() -> None:
    tags = python_tags(
        b'"""def not_a_function(): import not_a_module"""\n'
        b"# class NotAClass: mentioned in a comment\n"
        b"x = rb'raw bytes' + f'{total} items' + 'Several quoted words'\n"
    )
    assert [d.name for d in tags.definitions] == ["x"]
    assert tags.imports == ()
    assert {"several", "quoted", "not_a_function", "notaclass", "raw", "rb"} <= set(tags.terms)
    assert set(tags.references) == {"x", "total"}


def test_names_in_f_string_fields_are_uses_their_conversions_and_literal_braces_are_not() -> None:
    tags = python_tags(
        b"def show(user, items, width):\n"
        b"    return f\"{user.name!r:>{width}} {{literal}} {', '.join(items)} \\N{DEGREE SIGN} {width != 0}\"\n"
    )
    assert set(tags.references) == {"show", "user", "items", "width", "name", "join"}


def test_keywords_numbers_and_match_statements_are_not_names() -> None:
    tags = python_tags(
        b"match = pattern.match(text)\n"
        b"match command:\n"
        b"    case Point(x=0) if True:\n"
        b"        size = 1e5 + 0xFF + 10_000j\n"
        b"    case _:\n"
        b"        size = None\n"
    )
    assert tags.references["match"] == 2  # the variable and the method; the statement's `match` is a keyword
    assert "case" not in tags.references
    assert {"Point", "x", "size", "command", "pattern", "text"} <= set(tags.references)
    assert not {"e5", "xFF", "j", "True", "None", "if"} & set(tags.references)


def test_imports_as_written_with_their_members() -> None:
    tags = python_tags(
        b"from __future__ import annotations\n"
        b"import os.path as p, sys  # comment\n"
        b"from . import sibling\n"
        b"from ..pkg.mod import \\\n"
        b"    (first as f,  # why\n"
        b"     second,)\n"
        b"from star import *\n"
        b"def lazy():\n"
        b"    import json\n"
    )
    assert set(tags.imports) == {
        "os.path",
        "sys",
        ".",
        ".sibling",
        "..pkg.mod",
        "..pkg.mod.first",
        "..pkg.mod.second",
        "star",
        "json",
    }
    assert "__future__" not in tags.references
    assert "pkg" not in tags.references  # words of module paths name no definition


def test_windows_line_ends_and_tab_indentation_give_the_same_lines() -> None:
    unix = b"class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n\nB = A()\n"
    expected = spans(python_tags(unix))
    assert expected == {"A": ("class", 1, 6), "f": ("function", 2, 3), "g": ("function", 5, 6), "B": ("constant", 8, 8)}
    assert spans(python_tags(unix.replace(b"\n", b"\r\n"))) == expected
    assert spans(python_tags(unix.replace(b"    ", b"\t"))) == expected


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones too (definitions and imports are statements: no need to walk expressions)."""
    for statement in body:
        yield statement
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for inner in getattr(statement, field, ()):
                yield from _statements(inner.body if isinstance(inner, ast.ExceptHandler | ast.match_case) else [inner])


def _parsed(source: bytes) -> tuple[dict[tuple[str, str, int], int], set[str]] | None:
    """What Python's own parser says: (name, kind, first line) -> last line, and the imports; None if it
    cannot parse the file (written for another Python)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    definitions: dict[tuple[str, str, int], int] = {}
    imports: set[str] = set()
    for node in _statements(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            definitions[node.name, kind, start] = node.end_lineno or start
        elif isinstance(node, ast.Import):
            imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            module = "." * node.level + (node.module or "")
            joint = "" if module.endswith(".") else "."
            imports.add(module)
            imports.update(f"{module}{joint}{alias.name}" for alias in node.names if alias.name != "*")
    for statement in tree.body:
        target = statement.targets[0] if isinstance(statement, ast.Assign) else getattr(statement, "target", None)
        if isinstance(target, ast.Name) and isinstance(statement, ast.Assign | ast.AnnAssign):
            definitions[target.id, "constant", statement.lineno] = statement.end_lineno or statement.lineno
    return definitions, imports


def _disagreements(name: str, source: bytes) -> list[str]:
    parsed = _parsed(source)
    if parsed is None:
        return []
    definitions, imports = parsed
    tags = python_tags(source)
    found = {(d.name, d.kind, d.start_line): d.end_line for d in tags.definitions}
    problems = []
    if set(found) != set(definitions):
        problems.append(f"{name}: definitions {set(definitions) ^ set(found)}")
    lines = source.splitlines()
    for key in set(found) & set(definitions):
        # A block keeps the comments after its last statement that are indented deeper than its header.
        between = lines[definitions[key] : found[key]]
        if found[key] < definitions[key] or any(line.strip() and not line.strip().startswith(b"#") for line in between):
            problems.append(f"{name}: {key} ends at {found[key]}, Python says {definitions[key]}")
    if set(tags.imports) != imports:
        problems.append(f"{name}: imports {imports ^ set(tags.imports)}")
    return problems


@pytest.mark.parametrize("dist", [DJANGO, *(release.base for release in RELEASES)], ids=lambda dist: dist.file)
def test_definitions_and_imports_agree_with_pythons_parser_on_a_real_release(dist: object) -> None:
    problems: list[str] = []
    checked = 0
    with tarfile.open(fetch(dist)) as tar:  # type: ignore[arg-type]
        for member in tar:
            file = tar.extractfile(member) if member.name.endswith(".py") else None
            if file is not None:
                problems += _disagreements(member.name, file.read())
                checked += 1
    assert checked > 0
    assert problems == []


def test_definitions_and_imports_agree_with_pythons_parser_on_this_repository() -> None:
    problems: list[str] = []
    for path in sorted(ROOT.glob("bot/**/*.py")) + sorted(ROOT.glob("tests/**/*.py")):
        problems += _disagreements(str(path.relative_to(ROOT)), path.read_bytes())
    assert problems == []
