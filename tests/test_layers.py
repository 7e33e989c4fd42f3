"""The layering rule: `bot.*` imports point down the floors named in docs/architecture.md, and no files import in a
circle."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLOORS: list[set[str]] = [
    {"vocabulary", "errors", "settings", "redact", "markers", "markdown", "snapshot", "envdir", "secrets", "labels"},
    {"github"},
    {"contract"},
    {"queue", "sandbox", "workspace", "model", "context"},
    {"checks"},
    {"evidence", "ci"},
    {"loop"},
    {"publish", "eval"},
    {"job"},
    {"viewer"},
    {"intake", "setup"},
    {"commands"},
]
"""Ground floor first. A package may import packages on lower floors only; the ground floor's modules may
import each other (without circles); packages on one floor are independent of each other."""


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def bot_imports(root: Path, path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) of every import in the file, including those inside functions and under TYPE_CHECKING.

    `from a.b import c` gives `a.b.c` (c may be a module or a name defined in a.b)."""
    package = module_name(root, path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def floor_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for n, floor in enumerate(FLOORS):
        if top in floor:
            return n
    raise AssertionError(f"{module}: its package {top!r} is on no floor; add it to FLOORS and docs/architecture.md")


def sources(root: Path) -> list[Path]:
    return sorted((root / "bot").rglob("*.py"))


def upward_imports(root: Path = ROOT) -> list[str]:
    found = []
    for path in sources(root):
        me = module_name(root, path)
        if me == "bot":
            continue
        mine, my_top = floor_of(me), me.split(".")[1]
        for line, target in bot_imports(root, path):
            if not target.startswith("bot.") or target.split(".")[1] == my_top:
                continue
            theirs = floor_of(target)
            if theirs > mine or (theirs == mine and mine != 0):
                found.append(f"{path.relative_to(root)}:{line}: {me} (floor {mine}) imports {target} (floor {theirs})")
    return found


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """Every circle in the file-level import graph (importing a package counts as importing its __init__)."""
    modules = {module_name(root, p): p for p in sources(root)}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for me, path in modules.items():
        for _, target in bot_imports(root, path):
            while target and target not in modules:
                target = target.rpartition(".")[0]  # `from bot.x import name` where name is not a module
            if target and target != me:
                graph[me].add(target)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def test_every_bot_import_points_down_the_floors() -> None:
    assert upward_imports() == []


def test_no_files_import_each_other_in_a_circle() -> None:
    assert import_cycles() == []


def test_the_rule_catches_an_upward_import_and_a_circle(tmp_path: Path) -> None:
    fake = tmp_path / "bot"
    for rel, text in {
        "__init__.py": "",
        "errors.py": "",
        "workspace/__init__.py": "",
        "workspace/git.py": "from bot.workspace.gate import check\n",
        "workspace/gate.py": "from bot.workspace import git\nfrom bot.loop.loop import Loop\n",
        "loop/__init__.py": "",
        "loop/loop.py": "from bot.errors import AiFixError\n",
    }.items():
        (fake / rel).parent.mkdir(parents=True, exist_ok=True)
        (fake / rel).write_text(text)
    assert upward_imports(tmp_path) == [
        "bot/workspace/gate.py:2: bot.workspace.gate (floor 3) imports bot.loop.loop.Loop (floor 6)"
    ]
    assert import_cycles(tmp_path) == [["bot.workspace.gate", "bot.workspace.git", "bot.workspace.gate"]]


def test_the_architecture_page_states_the_same_floors() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    m = re.search(r"^Floors, ground first: (.+)$", page, re.MULTILINE)
    assert m, "docs/architecture.md must state the floors in one line: 'Floors, ground first: ...'"
    stated = [set(re.findall(r"`(\w+)`", part)) for part in m.group(1).split("→")]
    assert stated == FLOORS
