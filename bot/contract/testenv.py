"""The test environment a project's tox or nox configuration describes: what it installs and what it runs.

A person reading `tox.ini` sees the test environment's `deps`, `extras` and `dependency_groups` and its
`commands`; ai-fix reads the same, for the environment the project's CI runs (`tox -e py`) or else the
base `[testenv]`, keeping a factor-conditional line (`tests: pytest {posargs}`) when its factors are
those of a test run (`py`, `test`, `tests`, `testing`, `unit`, or the named environment's own). tox's
settings are read from `tox.ini`, `setup.cfg`'s `[tox:tox]` and `[testenv]`, `pyproject.toml`'s
`legacy_tox_ini` or its native `[tool.tox.env_run_base]`; nox's from the `session.install(...)` and
`session.run(...)` calls with literal arguments in a `noxfile.py` session named for tests. Substitutions
ai-fix can resolve (`{posargs}`, `{envpython}`, `{toxinidir}`, `{env:X:default}`) are; a line holding any
other is left out. Pure: the files come through `Root`.
"""

from __future__ import annotations

import ast
import configparser
import re
import shlex
from dataclasses import dataclass, field

from bot.contract.root import Root

TEST_FACTORS = frozenset({"py", "test", "tests", "testing", "unit", "pytest"})
NOX_SESSIONS = ("tests", "test", "unit", "pytest", "unittests")
_CONDITION = re.compile(r"^\s*(?P<factors>[\w.!,-]+):\s+(?P<rest>.*)$")
_SUBSTITUTION = re.compile(r"\{(?P<inner>[^{}]*)\}")


@dataclass(frozen=True)
class TestEnv:
    source: str
    """Where it was read: `tox.ini [testenv]`, `noxfile.py session tests`."""
    deps: tuple[str, ...] = ()
    """pip arguments: requirements, `-r file`, `-e .[x]`."""
    extras: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    """PEP 735 dependency groups."""
    commands: tuple[str, ...] = ()
    skip_install: bool = False


@dataclass
class _Ini:
    sections: dict[str, dict[str, str]] = field(default_factory=dict)
    file: str = ""


def _substitute(text: str) -> str | None:
    """`text` with tox's substitutions resolved, or None when one cannot be."""

    def one(m: re.Match[str]) -> str:
        inner = m["inner"]
        if inner.startswith("posargs"):
            return inner.partition(":")[2]
        if inner in ("envpython", "env_python"):
            return "python"
        if inner in ("toxinidir", "tox_root"):
            return "."
        if inner in ("envtmpdir", "env_tmp_dir"):
            return "/tmp/tox-env-tmp"
        if inner.startswith("env:") and inner.count(":") >= 2:
            return inner.split(":", 2)[2]
        raise LookupError(inner)

    try:
        while (resolved := _SUBSTITUTION.sub(one, text)) != text:  # inside out: `{posargs: {toxinidir}/tests}`
            text = resolved
    except LookupError:
        return None
    return text


def _applies(factors: str, wanted: frozenset[str]) -> bool:
    """Whether a `a,b-c:` condition holds for an environment with the `wanted` factors (`,` or, `-` and, `!` not)."""
    for alternative in factors.split(","):
        parts = [p for p in alternative.split("-") if p]
        if parts and all((p[1:] not in wanted) if p.startswith("!") else (p in wanted) for p in parts):
            return True
    return False


def _lines(value: str, wanted: frozenset[str]) -> list[str]:
    """A multi-line tox value's lines (continuations joined, comments and other factors' lines dropped)."""
    out: list[str] = []
    for raw in value.replace("\\\n", " ").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        m = _CONDITION.match(line)
        if m is not None and not m["factors"].startswith("-"):
            if not _applies(m["factors"], wanted):
                continue
            line = m["rest"].strip()
        if (resolved := _substitute(line)) is not None and resolved.strip():
            out.append(resolved.strip())
    return out


def _ini(text: str, file: str, prefix: str = "") -> _Ini:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return _Ini()
    sections = {name.removeprefix(prefix): dict(parser[name]) for name in parser.sections()}
    return _Ini(sections, file)


def _tox_ini(root: Root) -> _Ini:
    if root.has("tox.ini"):
        return _ini(root.text("tox.ini"), "tox.ini")
    tool = root.pyproject().get("tool")
    tox = tool.get("tox") if isinstance(tool, dict) else None
    if isinstance(tox, dict) and isinstance(legacy := tox.get("legacy_tox_ini"), str):
        return _ini(legacy, "pyproject.toml legacy_tox_ini")
    if root.ini_section("setup.cfg", "tox:tox"):
        return _ini(root.text("setup.cfg"), "setup.cfg", prefix="tox:")
    return _Ini()


def _env_section(ini: _Ini, env: str) -> tuple[str, dict[str, str]]:
    """The section that configures `env` (its own, else the base `[testenv]`)."""
    own = f"testenv:{env}" if env else ""
    if own and own in ini.sections:
        base = dict(ini.sections.get("testenv", {}))
        base.update(ini.sections[own])
        return own, base
    return "testenv", ini.sections.get("testenv", {})


def _words(value: str) -> tuple[str, ...]:
    return tuple(w for line in value.splitlines() for w in re.split(r"[\s,]+", line) if w and not w.startswith("#"))


def _native_tox(root: Root) -> TestEnv | None:
    """pyproject.toml's `[tool.tox.env_run_base]` (tox 4.21's TOML form)."""
    tool = root.pyproject().get("tool")
    tox = tool.get("tox") if isinstance(tool, dict) else None
    base = tox.get("env_run_base") if isinstance(tox, dict) else None
    if not isinstance(base, dict):
        return None
    commands = []
    for argv in base.get("commands", []):
        if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
            words = [w for a in argv if (w := _substitute(a)) is not None and w]
            commands.append(shlex.join(words))

    def strings(key: str) -> tuple[str, ...]:
        value = base.get(key, [])
        return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

    return TestEnv(
        source="pyproject.toml [tool.tox.env_run_base]",
        deps=strings("deps"),
        extras=strings("extras"),
        groups=strings("dependency_groups"),
        commands=tuple(commands),
        skip_install=base.get("skip_install") is True,
    )


def tox_env(root: Root, env: str = "") -> TestEnv | None:
    """The tox environment `env` (the CI's), else the base test environment; None without a tox configuration."""
    ini = _tox_ini(root)
    if "testenv" not in ini.sections and not any(s.startswith("testenv:") for s in ini.sections):
        return _native_tox(root)
    name, section = _env_section(ini, env)
    wanted = TEST_FACTORS | frozenset(env.split("-") if env else ())
    return TestEnv(
        source=f"{ini.file} [{name}]",
        deps=tuple(_lines(section.get("deps", ""), wanted)),
        extras=_words("\n".join(_lines(section.get("extras", ""), wanted))),
        groups=_words("\n".join(_lines(section.get("dependency_groups", ""), wanted))),
        commands=tuple(_lines(section.get("commands", ""), wanted)),
        skip_install=section.get("skip_install", "").strip().lower() == "true",
    )


def tox_env_running(root: Root, tool: str) -> TestEnv | None:
    """The tox environment of its own (`[testenv:mypy]`) whose commands run `tool` unconditionally, if any."""
    ini = _tox_ini(root)
    for name in ini.sections:
        if not name.startswith("testenv:") or "{" in name:
            continue
        env = tox_env(root, name.removeprefix("testenv:"))
        if env is not None and any(re.match(rf"(python -m )?{re.escape(tool)}\b", c) for c in env.commands):
            return env
    return None


def _literal_args(call: ast.Call) -> list[str] | None:
    """The call's positional string arguments, or None when one is not a literal (`*session.posargs` is skipped)."""
    args: list[str] = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            args.append(arg.value)
        elif not isinstance(arg, ast.Starred):
            return None
    return args


def _is_session(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "session"


def nox_env(root: Root) -> TestEnv | None:
    """The test session of `noxfile.py` (named tests, test, unit, ...): its literal installs and runs."""
    if not root.has("noxfile.py"):
        return None
    try:
        tree = ast.parse(root.text("noxfile.py"))
    except SyntaxError:
        return None
    sessions = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and any(_is_session(d) for d in node.decorator_list)
    }
    name = next((n for n in NOX_SESSIONS if n in sessions), None)
    if name is None:
        return None
    deps: list[str] = []
    commands: list[str] = []
    for node in ast.walk(sessions[name]):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        args = _literal_args(node)
        if args is None or not args:
            continue
        if node.func.attr == "install":
            deps += args
        elif node.func.attr == "run":
            commands.append(shlex.join(args))
    return TestEnv(source=f"noxfile.py session {name}", deps=tuple(deps), commands=tuple(commands))
