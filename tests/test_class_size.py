"""Objects stay small enough to own their state: no class in `bot/` over 150 lines or 12 attributes.

Attributes are a class's instance state: every `self.x` it assigns (tuple unpacking and augmented assignment
included) and every field it declares in its body. Pydantic models are exempt from the attribute count, not
from the line count: each is the schema of a file format, a table row or the environment (`Settings`), and
its width is that format's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 150
MAX_ATTRIBUTES = 12
SCHEMA_BASES = frozenset({"BaseModel", "BaseSettings"})


def _assigned(node: ast.AST) -> Iterator[ast.expr]:
    targets = (
        node.targets
        if isinstance(node, ast.Assign)
        else [node.target]
        if isinstance(node, ast.AnnAssign | ast.AugAssign)
        else []
    )
    stack = list(targets)
    while stack:
        target = stack.pop()
        if isinstance(target, ast.Tuple | ast.List):
            stack += target.elts
        elif isinstance(target, ast.Starred):
            stack.append(target.value)
        else:
            yield target


def attributes(cls: ast.ClassDef) -> set[str]:
    names = {s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    for node in ast.walk(cls):
        for target in _assigned(node):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                names.add(target.attr)
    return names


def is_schema(cls: ast.ClassDef) -> bool:
    return any((b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")) in SCHEMA_BASES for b in cls.bases)


def oversized(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for cls in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(cls, ast.ClassDef):
                continue
            lines = (cls.end_lineno or cls.lineno) - cls.lineno + 1
            count = len(attributes(cls))
            where = f"{path.relative_to(root)}:{cls.lineno}: {cls.name}"
            if lines > MAX_LINES:
                found.append(f"{where}: {lines} lines")
            if count > MAX_ATTRIBUTES and not is_schema(cls):
                found.append(f"{where}: {count} attributes")
    return found


def test_no_class_in_bot_is_over_the_limits() -> None:
    assert oversized(ROOT / "bot") == [], "split these along what they own:\n" + "\n".join(oversized(ROOT / "bot"))


def test_the_measure_counts_what_a_class_holds(tmp_path: Path) -> None:
    fields = "\n".join(f"    f{i}: int = 0" for i in range(7))
    source = (
        "from dataclasses import dataclass\nfrom pydantic import BaseModel\n\n\n"
        f"@dataclass\nclass Record:\n{fields}\n\n"
        "    def grow(self) -> None:\n        self.a, (self.b, self.c) = 1, (2, 3)\n        self.d += 1\n"
        "        self.e: int = 4\n        self.f = self.g = 5\n\n\n"
        f"class Schema(BaseModel):\n{fields.replace('f', 'g')}\n{fields.replace('f', 'h')}\n\n\n"
        "class Long:\n" + "    x = 1\n" * MAX_LINES
    )
    (tmp_path / "wide.py").write_text(source)
    long_at = source.splitlines().index("class Long:") + 1
    assert oversized(tmp_path) == [
        "wide.py:6: Record: 14 attributes",
        f"wide.py:{long_at}: Long: {MAX_LINES + 1} lines",
    ]
