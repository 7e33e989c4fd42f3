"""What a Python project's tests need installed, from wherever the project says it.

The extras meant for tests (`test`, `tests`, `testing`; `dev` when there is none of those), PEP 735
`[dependency-groups]` (their `include-group`s followed), Poetry's and PDM's groups and hatch's test
environments of those names, requirement files for tests (`tests/requirements.txt`,
`requirements/tests.txt`, ...), the test environment of tox or nox (`bot.contract.testenv`) and the
`pip install` lines of the CI's testing job (`bot.contract.workflows`). Each source found is named, so
the contract shows where setup came from. And the version the project pins for a linter: its
pre-commit hook's `rev`, a requirement `tool==X` or its lock file's entry. Pure: files through `Root`.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field

import yaml

from bot.contract.root import Root
from bot.contract.testenv import TestEnv

TEST_NAMES = ("test", "tests", "testing")
FALLBACK = "dev"
REQUIREMENT_FILES = (
    "requirements-dev.txt", "requirements_dev.txt", "dev-requirements.txt", "requirements-test.txt",
    "requirements-tests.txt", "requirements_test.txt", "test-requirements.txt", "tests/requirements.txt",
    "test/requirements.txt", "requirements/test.txt", "requirements/tests.txt", "requirements/testing.txt",
    "requirements/dev.txt",
)  # fmt: skip
"""Requirement files for tests, where projects keep them; `requirements.txt` too when the project cannot be installed."""
NOT_FOR_TESTS = frozenset({"pip", "setuptools", "wheel", "tox", "nox", "build", "twine", "uv", "virtualenv"})
"""What a CI step installs to run tox, build or publish: not a test dependency."""
TOOL_PLUGINS = ("tox-", "nox-")
"""A package named so is a plugin of tox or nox (tox-uv, tox-gh-actions): it changes how they run, not the tests."""
PRE_COMMIT_HOOKS = {
    "ruff": ("astral-sh/ruff-pre-commit", "charliermarsh/ruff-pre-commit"),
    "mypy": ("pre-commit/mirrors-mypy",),
    "flake8": ("pycqa/flake8",),
}
"""A linter → the pre-commit hook repositories whose `rev` is its version."""
LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock")
"""Lock files ai-fix reads, each a TOML list of `[[package]]` with its `name` and `version`."""
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?")
_VALUE_FLAGS = frozenset({"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url", "-f",
                          "--find-links", "-t", "--target", "--python"})  # fmt: skip
_PROJECT = re.compile(r"^(?:-e\s+)?\.(?:\[(?P<extras>[^\]]*)\])?$")


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Deps:
    requirements: list[str] = field(default_factory=list)
    """Requirement specifiers."""
    files: list[str] = field(default_factory=list)
    """Requirement files (`pip install -r`)."""
    extras: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def add(
        self, source: str, requirements: Iterable[str] = (), extras: Iterable[str] = (), files: Iterable[str] = ()
    ) -> None:
        reqs, wanted, listed = list(requirements), list(extras), list(files)
        if not reqs and not wanted and not listed:
            return
        self.requirements += [r for r in reqs if r not in self.requirements]
        self.extras += [e for e in wanted if e not in self.extras]
        self.files += [f for f in listed if f not in self.files]
        self.sources.append(source)


def extras(root: Root) -> dict[str, list[str]]:
    """The optional dependencies by extra, from pyproject.toml's [project] or setup.cfg's [options.extras_require]."""
    project = root.pyproject().get("project")
    found = project.get("optional-dependencies") if isinstance(project, dict) else None
    if isinstance(found, dict):
        return {str(k): [str(r) for r in v] for k, v in found.items() if isinstance(v, list)}
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(root.text("setup.cfg"))
    except configparser.Error:
        return {}
    if not parser.has_section("options.extras_require"):
        return {}
    return {k: [line for line in v.splitlines() if line.strip()] for k, v in parser["options.extras_require"].items()}


def _table(data: object, *keys: str) -> dict[str, object]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _wanted(names: Iterable[str], named: Iterable[str] = ()) -> list[str]:
    """The test groups among `names` (and those `named` by tox), else `dev`."""
    names = list(names)
    found = [n for n in (*named, *TEST_NAMES) if n in names]
    return list(dict.fromkeys(found)) or ([FALLBACK] if FALLBACK in names else [])


def _group(groups: dict[str, object], name: str, seen: set[str]) -> list[str]:
    """A PEP 735 group's requirements, its `include-group`s followed (each once)."""
    out: list[str] = []
    entries = groups.get(name)
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, str):
            out.append(entry)
        elif isinstance(entry, dict) and isinstance(inc := entry.get("include-group"), str) and inc not in seen:
            seen.add(inc)
            out += _group(groups, inc, seen)
    return out


def poetry_requirement(name: str, spec: object) -> str:
    """A Poetry dependency as a PEP 508 requirement: `^1.2` is `>=1.2,<2`, `~1.2` is `>=1.2,<1.3`."""
    version = spec.get("version", "*") if isinstance(spec, dict) else spec
    version = str(version).strip()
    extras = spec.get("extras") if isinstance(spec, dict) else None
    head = f"{name}[{','.join(extras)}]" if isinstance(extras, list) and extras else name
    if version in ("", "*"):
        return head
    if version[0] in "^~" and not version.startswith("~="):
        parts = [int(p) if p.isdigit() else 0 for p in version[1:].split(".")]
        if version[0] == "^":
            at = next((i for i, p in enumerate(parts) if p != 0), len(parts) - 1)
        else:
            at = min(1, len(parts) - 1)
        upper = [*parts[:at], parts[at] + 1]
        return f"{head}>={version[1:]},<{'.'.join(map(str, upper))}"
    if version[0].isdigit():
        return f"{head}=={version}"
    return f"{head}{version}"


def _poetry(root: Root, deps: Deps) -> None:
    poetry = _table(root.pyproject(), "tool", "poetry")
    groups = _table(poetry, "group")
    for name in _wanted(groups):
        table = _table(groups, name, "dependencies")
        reqs = [poetry_requirement(n, s) for n, s in table.items() if n != "python"]
        deps.add(f"pyproject.toml [tool.poetry.group.{name}.dependencies]", reqs)
    legacy = _table(poetry, "dev-dependencies")
    reqs = [poetry_requirement(n, s) for n, s in legacy.items() if n != "python"]
    deps.add("pyproject.toml [tool.poetry.dev-dependencies]", reqs)


def _pdm_and_hatch(root: Root, deps: Deps) -> None:
    pdm = _table(root.pyproject(), "tool", "pdm", "dev-dependencies")
    for name in _wanted(pdm):
        entries = pdm[name]
        reqs = [str(e) for e in entries if isinstance(e, str)] if isinstance(entries, list) else []
        deps.add(f"pyproject.toml [tool.pdm.dev-dependencies] {name}", [r for r in reqs if not r.startswith("-e")])
    envs = _table(root.pyproject(), "tool", "hatch", "envs")
    for name in ("hatch-test", *TEST_NAMES, "default"):
        env = _table(envs, name)
        reqs = [str(r) for key in ("dependencies", "extra-dependencies") for r in _list(env.get(key))]
        features = [str(f) for f in _list(env.get("features"))]
        deps.add(f"pyproject.toml [tool.hatch.envs.{name}]", reqs, features)
        if reqs or features:
            return


def _for_tests(name: str) -> bool:
    return name not in NOT_FOR_TESTS and not name.startswith(TOOL_PLUGINS)


def _pip_args(args: Iterable[str], deps: Deps, source: str) -> None:
    """A `pip install` line's or tox `deps`' arguments: the project's extras, requirement files, other packages."""
    reqs: list[str] = []
    wanted: list[str] = []
    files: list[str] = []
    args = list(args)
    for i, arg in enumerate(args):
        if arg in ("-r", "--requirement") and i + 1 < len(args):
            files.append(args[i + 1].removeprefix("./"))
        elif arg.startswith("-r") and len(arg) > 2:
            files.append(arg[2:].strip().removeprefix("./"))
        elif (m := _PROJECT.match(arg)) is not None:
            wanted += [e.strip() for e in (m["extras"] or "").split(",") if e.strip()]
        elif arg.startswith("-") or (i > 0 and args[i - 1] in _VALUE_FLAGS):
            continue
        elif (m := _NAME.match(arg)) is not None and _for_tests(normal(m[1])) and "/" not in arg:
            reqs.append(arg)
    deps.add(source, reqs, wanted, files)


def add_env(root: Root, env: TestEnv, deps: Deps) -> None:
    """What a tox environment or nox session installs: its deps, extras and dependency groups."""
    args = [a for dep in env.deps for a in (dep.split(None, 1) if dep.startswith(("-r", "-e ")) else [dep])]
    _pip_args(args, deps, f"{env.source} deps")
    deps.add(f"{env.source} extras", [], [e for e in env.extras if e in extras(root)])
    groups = _table(root.pyproject(), "dependency-groups")
    for name in env.groups:
        if name in groups and f"pyproject.toml [dependency-groups] {name}" not in deps.sources:
            deps.add(f"pyproject.toml [dependency-groups] {name}", _group(groups, name, {name}))


def test_dependencies(root: Root, env: TestEnv | None, ci: list[tuple[list[str], str]]) -> Deps:
    """Everything the sources name for running the tests, each source named."""
    deps = Deps()
    found = extras(root)
    named = [e for e in (env.extras if env else ()) if e in found]
    deps.add("the extras for tests", [], _wanted(found, named))
    groups = _table(root.pyproject(), "dependency-groups")
    for name in _wanted(groups, env.groups if env else ()):
        deps.add(f"pyproject.toml [dependency-groups] {name}", _group(groups, name, {name}))
    _poetry(root, deps)
    _pdm_and_hatch(root, deps)
    for file in REQUIREMENT_FILES:
        if root.files.read_text(file) is not None:
            deps.add(file, files=[file])
    if env is not None:
        add_env(root, env, deps)
    for args, source in ci:
        _pip_args(args, deps, source)
    return deps


def pinned(root: Root, tool: str, requirements: Iterable[str]) -> str | None:
    """The version of `tool` the project pins: its pre-commit hook's rev, a `tool==X` requirement, its lock's entry."""
    try:
        config = yaml.safe_load(root.text(".pre-commit-config.yaml")) if root.has(".pre-commit-config.yaml") else None
    except yaml.YAMLError:
        config = None
    for repo in config.get("repos", []) if isinstance(config, dict) else []:
        url = str(repo.get("repo", "")).lower() if isinstance(repo, dict) else ""
        if any(url.endswith(hook) for hook in PRE_COMMIT_HOOKS.get(tool, ())):
            return str(repo.get("rev", "")).strip().removeprefix("v") or None
    for line in requirements:
        if (m := re.match(rf"^\s*{re.escape(tool)}\s*==\s*([\w.]+)", line, re.I)) is not None:
            return m[1]
    for file in LOCK_FILES:
        try:
            lock = tomllib.loads(root.text(file)) if root.has(file) else {}
        except tomllib.TOMLDecodeError:
            lock = {}
        for package in lock.get("package", []):
            if isinstance(package, dict) and package.get("name") == tool and isinstance(package.get("version"), str):
                return str(package["version"])
    return None
