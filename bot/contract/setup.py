"""Find a repository's setup when `.github/ai-fix.yml` names none, the way checks are detected.

Python: a virtual environment of its own at `.ai-fix-env/venv` inside the workspace (every sandbox
puts its `bin` first on PATH, so checks run with its interpreter and never see the host's or the
image's site-packages), the project installed into it editable with its test extra (`test`,
`tests`, `testing` or `dev`, the first it has), else its requirement files, then each detected
check's tool it does not already bring (a configured check's too, when its command names one:
`python -m pytest …`). A tool that cannot be installed does not stop setup: its check is then
reported not run.

Under `sandbox.network: none` nothing can be downloaded, so the Python guess uses what the sandbox
already has: the virtual environment sees the packages of the `python3` the sandbox finds (a `.pth`
file named to be read last, so the project's own paths come first), the project is installed
editable with the build tools found there (`--no-build-isolation --no-deps --no-index`), and when
that fails its source root (`src/` in a src layout) is put on the environment's import path
instead. Each way says which it took in a line starting `ai-fix:` (the setup report keeps them).

A guess is a guess: when it fails, what it made is removed and the checks run as they are (the
baseline decides whether the environment works; `bot.checks.setup`).

Node: the install its lock file asks for; Go: `go mod download`; Rust: `cargo fetch` (their stores
are kept in `.ai-fix-env` too).
"""

from __future__ import annotations

import configparser
import re
import shlex
from collections.abc import Sequence

from bot.contract.detect import Root
from bot.contract.files import RepoFiles
from bot.contract.models import Check
from bot.envdir import ENV_DIR, VENV, VENV_BIN

TEST_EXTRAS = ("test", "tests", "testing", "dev")
REQUIREMENTS = ("requirements-dev.txt", "requirements-test.txt", "requirements.txt")
CHECK_TOOLS = {"pytest": "pytest", "ruff": "ruff", "flake8": "flake8", "mypy": "mypy", "tox": "tox", "nox": "nox"}
"""Detected check → the package that provides its command."""
PIP = f"{VENV_BIN}/python -m pip install"
MAKE_ENV_DIR = f"mkdir -p {ENV_DIR} && printf '*\\n' > {ENV_DIR}/.gitignore"
MAKE_VENV = f"{MAKE_ENV_DIR} && python3 -m venv {VENV}"
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
_ERROR_LINE = (
    f"(grep -E '(Error|Exception): |^ *error: ' {INSTALL_LOG} | grep -v -e subprocess-exited -e generation-failed"
    f" || tail -n 1 {INSTALL_LOG}) | tail -n 1 | sed 's/^[^A-Za-z/]*//'"
)
"""Shell: the install log's last exception line (or its last line), for the note that says why pip failed."""
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _extras(root: Root) -> dict[str, list[str]]:
    """The optional dependencies by extra, from pyproject.toml's [project] or setup.cfg's [options.extras_require]."""
    project = root.pyproject().get("project")
    extras = project.get("optional-dependencies") if isinstance(project, dict) else None
    if isinstance(extras, dict):
        return {str(k): [str(r) for r in v] for k, v in extras.items() if isinstance(v, list)}
    parser = configparser.ConfigParser()
    try:
        parser.read_string(root.text("setup.cfg"))
    except configparser.Error:
        return {}
    if not parser.has_section("options.extras_require"):
        return {}
    return {k: [line for line in v.splitlines() if line.strip()] for k, v in parser["options.extras_require"].items()}


def _names(requirements: Sequence[str], extras: dict[str, list[str]], project: str, seen: set[str]) -> set[str]:
    """The package names a list of requirements installs directly, following the project's own extras (`pkg[tests-mypy]`)."""
    names: set[str] = set()
    for line in requirements:
        m = _NAME.match(line.split("#", 1)[0])
        if m is None or line.lstrip().startswith("-"):
            continue
        name = _normal(m.group(1))
        if name == project:
            for extra in (m.group(2) or "").split(","):
                if (extra := extra.strip()) in extras and extra not in seen:
                    seen.add(extra)
                    names |= _names(extras[extra], extras, project, seen)
        else:
            names.add(name)
    return names


def _installable(root: Root) -> bool:
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


def _offline_python(root: Root) -> list[str]:
    """Without network: an environment over the sandbox's own packages, the project installed or put on its path."""
    src = root.has("src")
    where, shown = ("$PWD/src", "src/") if src else ("$PWD", "the repository root")
    installed = "ai-fix: setup: installed the project (editable) without network, with the build tools the sandbox has"
    fallback = (
        f'{SITE} && echo "{where}" > "$1/ai-fix-source.pth" && echo "ai-fix: setup: pip could not install the '
        f'project without network ($( {_ERROR_LINE})); {shown} is on the import path instead"'
    )
    install = f"{PIP} --no-build-isolation --no-deps --no-index -e . > {INSTALL_LOG} 2>&1"
    return [
        f"{MAKE_ENV_DIR} && ({OUTER_PATH}; python3 -m venv --without-pip {VENV})",
        SEE_OUTER,
        f"{install} && echo '{installed}' || {{ {fallback}; }}",
    ]


def _python(root: Root, checks: Sequence[Check], *, offline: bool) -> list[str]:
    requirements = [f for f in REQUIREMENTS if root.has(f)]
    installable = _installable(root)
    if not installable and not requirements:
        return []
    if offline:
        return _offline_python(root) if installable else []
    commands = [MAKE_VENV]
    provided: set[str] = set()
    extra = None
    if installable:
        extras = _extras(root)
        extra = next((e for e in TEST_EXTRAS if e in extras), None)
        commands.append(f"{PIP} -e '.[{extra}]'" if extra else f"{PIP} -e .")
        project = root.pyproject().get("project")
        name = _normal(str(project.get("name", ""))) if isinstance(project, dict) else ""
        provided = _names(extras[extra], extras, name, {extra}) if extra else set()
    if requirements and extra is None:
        commands.append(f"{PIP} " + " ".join(f"-r {r}" for r in requirements))
        provided |= _names([line for r in requirements for line in root.text(r).splitlines()], {}, "", set())
    for check in checks:
        tool = CHECK_TOOLS.get(check.name) if check.origin == "detected" else _check_tool(check)
        if tool and tool not in provided:
            commands.append(
                f"{PIP} {tool} || echo 'ai-fix: {tool} could not be installed; the {check.name} check will not run'"
            )
    return commands


def _node(root: Root) -> list[str]:
    if not root.has("package.json"):
        return []
    if root.has("pnpm-lock.yaml"):
        return ["pnpm install --frozen-lockfile"]
    if root.has("yarn.lock"):
        return ["yarn install --immutable"]
    if root.has("package-lock.json", "npm-shrinkwrap.json"):
        return ["npm ci"]
    return ["npm install"]


def detect_setup(files: RepoFiles | Root, checks: Sequence[Check], *, offline: bool = False) -> list[str]:
    """The setup commands a repository's own files point at (empty when there is nothing to install);
    `offline`: the config says `sandbox.network: none`, so nothing may need a download."""
    root = files if isinstance(files, Root) else Root(files)
    commands = _python(root, checks, offline=offline) + _node(root)
    if root.has("go.mod"):
        commands.append("go mod download")
    if root.has("Cargo.toml"):
        commands.append("cargo fetch")
    return commands
