"""A Python project's detected setup: its own environment, its test dependencies, its pinned linters.

A virtual environment of its own at `.ai-fix-env/venv` inside the workspace (every sandbox puts its
`bin` first on PATH, so checks run with its interpreter and never see the host's or the image's
site-packages). With a lock file (`uv.lock`, `poetry.lock`, `pdm.lock`), its tool installs what the lock
says into it, with the test groups and extras (`bot.contract.pylocks`). Otherwise one pip command installs the project
editable with its test extras and everything `bot.contract.pydeps` finds for its tests, resolved
together (so a test dependency that needs the project, as pytest needs pluggy, is satisfied by the
project itself). When pip cannot install the project, its dependencies and test dependencies are
installed without it and its source root (`src/` in a src layout) is put first on the import path, in
front of any other copy (a `.pth` that inserts it): the note starting `ai-fix:` says so and why, with
pip's own error line. Then each check's tool the dependencies do not bring, at the version the
project pins (`ruff==0.11.9` from its pre-commit hook); a tool that cannot be installed does not stop
setup: its check is then reported not run.

Under `sandbox.network: none` nothing can be downloaded, so the Python guess uses what the sandbox
already has: the virtual environment sees the packages of the `python3` the sandbox finds (a `.pth`
file named to be read last, so the project's own paths come first), the project is installed
editable with the build tools found there (`--no-build-isolation --no-deps --no-index`), and when
that fails its source root is put on the environment's import path instead.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from bot.contract.models import Check
from bot.contract.pydeps import Deps, add_env, extras, normal, pinned, test_dependencies
from bot.contract.pylocks import PIP, lock_install
from bot.contract.pytests import Found, test_env
from bot.contract.root import Root
from bot.contract.testenv import tox_env_running
from bot.contract.workflows import pip_installs, workflow_lines
from bot.envdir import ENV_DIR, VENV, VENV_BIN

CHECK_TOOLS = {"pytest": "pytest", "ruff": "ruff", "flake8": "flake8", "mypy": "mypy", "tox": "tox", "nox": "nox"}
"""Detected check → the package that provides its command."""
MAKE_ENV_DIR = f"mkdir -p {ENV_DIR} && printf '*\\n' > {ENV_DIR}/.gitignore"
MAKE_VENV = f"{MAKE_ENV_DIR} && python3 -m venv --upgrade-deps {VENV}"
"""With the newest pip (the interpreter's own may be years old), since detected setup has the network anyway."""
SITE = f"set -- {VENV}/lib/python*/site-packages"
"""Shell: `$1` becomes the environment's site-packages folder (the only one a new venv has)."""
OUTER_PTH = "zz-ai-fix-outer.pth"
"""Read after every other `.pth` (they go in name order), so an editable install's paths come before the outer packages."""
OUTER_PATH = 'PATH="${PATH#*/' + VENV_BIN + ':}"'
"""Shell: PATH without the environment's own `bin` (every sandbox puts it first), so `python3` is the sandbox's."""
SEE_OUTER = (
    f'{SITE} && ({OUTER_PATH}; python3 -c \'import site; print("import site; " + "; ".join('
    f'map("site.addsitedir({{!r}})".format, site.getsitepackages())))\') > "$1/{OUTER_PTH}"'
)
"""The offline environment sees the packages of the sandbox's own `python3` (its test runner, its build tools)."""
INSTALL_LOG = f"{ENV_DIR}/install.log"
ERROR_LINE = (
    f"(grep -E '(Error|Exception): |^ *(error|ERROR): ' {INSTALL_LOG} | grep -v -e subprocess-exited -e generation-failed"
    f" -e '^\\[notice\\]' || grep -v -e '^\\[notice\\]' -e '^ *$' {INSTALL_LOG} | tail -n 1) | tail -n 1"
    " | sed 's/^[^A-Za-z/]*//'"
)
"""Shell: the install log's last error line (or its last line that is not one of pip's notices)."""
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?")
VENV_SOURCE = "ai-fix: the project's own environment"


def readable(command: str) -> str:
    """A detected install as a person reads it: without its log redirection and the way without the project."""
    return command.split(f" > {INSTALL_LOG}", 1)[0]


def whole(line: str, limit: int) -> str:
    """`line`, cut at a word boundary when it is longer than `limit`."""
    return line if len(line) <= limit else line[:limit].rsplit(" ", 1)[0] + " …"


def _names(requirements: Sequence[str], found: dict[str, list[str]], project: str, seen: set[str]) -> set[str]:
    """The package names requirements install directly, following the project's own extras (`pkg[tests-mypy]`)."""
    names: set[str] = set()
    for line in requirements:
        m = _NAME.match(line.split("#", 1)[0])
        if m is None or line.lstrip().startswith("-"):
            continue
        name = normal(m.group(1))
        if name == project:
            for extra in (m.group(2) or "").split(","):
                if (extra := extra.strip()) in found and extra not in seen:
                    seen.add(extra)
                    names |= _names(found[extra], found, project, seen)
        else:
            names.add(name)
    return names


def installable(root: Root) -> bool:
    data = root.pyproject()
    return root.has("setup.py", "setup.cfg") or "project" in data or "build-system" in data


def _check_tool(check: Check) -> str | None:
    """The package a check's command runs as its first program (`pytest -q`, `env X=1 python -m pytest`), if known."""
    try:
        words = shlex.split(check.run)
    except ValueError:
        return None
    while words and (words[0] == "env" or "=" in words[0] or (words[0].startswith("-") and len(words) > 1)):
        words.pop(0)
    if len(words) >= 3 and re.fullmatch(r"python(\d+(\.\d+)?)?", words[0]) and words[1] == "-m":
        return CHECK_TOOLS.get(words[2])
    return CHECK_TOOLS.get(words[0]) if words else None


def offline_python(root: Root) -> list[Found]:
    """Without network: an environment over the sandbox's own packages, the project installed or put on its path."""
    if not installable(root):
        return []
    src = root.has("src")
    where, shown = ("$PWD/src", "src/") if src else ("$PWD", "the repository root")
    installed = "ai-fix: setup: installed the project (editable) without network, with the build tools the sandbox has"
    fallback = (
        f'{SITE} && echo "{where}" > "$1/ai-fix-source.pth" && echo "ai-fix: setup: pip could not install the '
        f'project without network ($( {ERROR_LINE})); {shown} is on the import path instead"'
    )
    install = f"{PIP} --no-build-isolation --no-deps --no-index -e . > {INSTALL_LOG} 2>&1"
    source = "offline: the project's manifest, with what the sandbox has"
    return [
        Found(f"{MAKE_ENV_DIR} && ({OUTER_PATH}; python3 -m venv --without-pip {VENV})", VENV_SOURCE),
        Found(SEE_OUTER, source),
        Found(f"{install} && echo '{installed}' || {{ {fallback}; }}", source),
    ]


def _quoted(args: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in args)


def _project_requirements(root: Root) -> list[str]:
    project = root.pyproject().get("project")
    listed = project.get("dependencies") if isinstance(project, dict) else None
    return [str(r) for r in listed] if isinstance(listed, list) else []


def _project_name(root: Root) -> str:
    project = root.pyproject().get("project")
    return normal(str(project.get("name", ""))) if isinstance(project, dict) else ""


def _requirement_name(requirement: str) -> str:
    m = _NAME.match(requirement)
    return normal(m[1]) if m else ""


def _pip_install(root: Root, deps: Deps) -> Found:
    """The one pip command: the project with its test extras and test dependencies; without the project when it
    cannot be installed, its source first on the import path."""
    found = extras(root)
    wanted = [e for e in deps.extras if e in found]
    project = f".[{','.join(wanted)}]" if wanted else "."
    others = [*deps.requirements, *(a for f in deps.files for a in ("-r", f))]
    where, shown = ("$PWD/src", "src/") if root.has("src") else ("$PWD", "the repository root")
    # Without the project: what it and its test extras need, never the project itself (that would be another copy).
    needed = [*_project_requirements(root), *(r for e in wanted for r in found[e])]
    kept = [r for r in needed if _requirement_name(r) != _project_name(root)]
    without = _quoted(list(dict.fromkeys([*kept, *others])))
    first = f"import sys; sys.path.insert(0, '{where}')"
    fallback = (
        f'{{ {PIP} {without} && {SITE} && echo "{first}" > "$1/000-ai-fix-source-first.pth" && '
        f'echo "ai-fix: setup: pip could not install the project ($( {ERROR_LINE})); its dependencies are installed '
        f'and {shown} is first on the import path instead"; }}'
    )
    install = f"{PIP} -e {shlex.quote(project)} {_quoted(others)}".rstrip()
    sources = ", ".join(["the project's manifest", *deps.sources])
    return Found(f"{install} > {INSTALL_LOG} 2>&1 || {fallback}", sources)


def network_python(root: Root, checks: Sequence[Check]) -> list[Found]:
    """With network: the project's environment, its test dependencies and its checks' tools (see the docstring)."""
    lines = workflow_lines(root)
    deps = test_dependencies(root, test_env(root, lines), pip_installs(lines))
    mypy = tox_env_running(root, "mypy")
    if mypy is not None and any(c.source.startswith(mypy.source) for c in checks if c.name == "mypy"):
        add_env(root, mypy, deps)  # the types mypy needs, as the project's own mypy environment installs them
    project_ok = installable(root)
    locked = lock_install(root, deps)
    if not project_ok and not locked and root.has("requirements.txt"):
        deps.add("requirements.txt", files=["requirements.txt"])
    if not project_ok and not locked and not deps.files and not deps.requirements:
        return []
    commands = [Found(MAKE_VENV, VENV_SOURCE)]
    if locked:
        commands += locked
    elif project_ok:
        commands.append(_pip_install(root, deps))
    else:
        args = _quoted([*deps.requirements, *(a for f in deps.files for a in ("-r", f))])
        commands.append(Found(f"{PIP} {args}", ", ".join(deps.sources)))
    files = [(root.files.read_text(f) or "").splitlines() for f in deps.files]
    requirement_lines = [*deps.requirements, *(line for lines in files for line in lines)]
    found = extras(root)
    from_extras = [r for e in deps.extras if e in found for r in found[e]]
    provided = _names([*requirement_lines, *from_extras], found, _project_name(root), set())
    for check in checks:
        tool = CHECK_TOOLS.get(check.name) if check.origin == "detected" else _check_tool(check)
        if tool and tool not in provided:
            version = pinned(root, tool, requirement_lines)
            spec = f"{tool}=={version}" if version else tool
            source = f"the {check.name} check" + (f", pinned by the project to {version}" if version else "")
            note = f"ai-fix: {spec} could not be installed; the {check.name} check will not run"
            commands.append(Found(f"{PIP} {shlex.quote(spec)} || echo '{note}'", source))
    return commands
