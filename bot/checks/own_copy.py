"""Never test another copy of the project: before the baseline, where would its packages be imported from?

When the project could not be installed (or a dependency brought its released version, as pytest
brings pluggy), `import pkg` in the checks may find a copy outside the repository: the host's
site-packages or one installed into the project's environment. A check that passed or failed there
would say nothing of the repository's code. So before the baseline, the sandbox's `python` is asked
where each of the repository's top-level packages (at the root and under `src/`, tests and docs
aside) would come from, run in the workspace as the checks are (`find_spec` runs none of their code);
a Python check whose package would come from elsewhere is reported `not_run` with that reason and
the line that fixes it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from bot.contract.models import Check
from bot.envdir import DEPENDENCY_DIRS
from bot.sandbox.base import Sandbox

NOT_THE_PROJECT = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "benchmarks", "scripts"})
_PYTHON_CHECK = re.compile(r"^(?:\S+=\S*\s+|env\s+)*(?:python[\d.]*|pytest|py\.test|coverage)(?:\s|$)")
_PROBE = (
    "import importlib.util, sys\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        spec = importlib.util.find_spec(name)\n"
    "    except Exception:\n"
    "        continue\n"
    "    where = spec and (spec.origin if spec.has_location else next(iter(spec.submodule_search_locations or []), ''))\n"
    "    print(name + '\\t' + (where or ''))\n"
)


def own_packages(workspace: Path) -> list[str]:
    """The repository's top-level import packages (folders with `__init__.py`) at its root and under `src/`."""
    names: list[str] = []
    for base in (workspace, workspace / "src"):
        if base.is_dir():
            names += sorted(
                p.name
                for p in base.iterdir()
                if p.is_dir() and (p / "__init__.py").is_file() and p.name not in NOT_THE_PROJECT
            )
    return names


def runs_python(check: Check) -> bool:
    return _PYTHON_CHECK.match(check.run) is not None


def other_copies(sandbox: Sandbox, names: list[str]) -> dict[str, str]:
    """Each package a plain `import` in the workspace would take from outside the repository, with that path."""
    if not names:
        return {}
    probe = sandbox.exec(f"python -c {shlex.quote(_PROBE)} {' '.join(map(shlex.quote, names))}", timeout=60)
    if probe.exit_code != 0:
        return {}  # no python at all: the Python checks say so themselves
    own = sandbox.workdir.rstrip("/") + "/"
    found: dict[str, str] = {}
    for line in probe.output.splitlines():
        name, _, where = line.partition("\t")
        inside = where.startswith(own) and where.removeprefix(own).split("/", 1)[0] not in DEPENDENCY_DIRS
        if name in names and where and not inside:
            found[name] = where
    return found


def not_own_reason(found: dict[str, str], setup_problem: str) -> str:
    """Why a Python check does not run, and what fixes it."""
    name, where = next(iter(found.items()))
    why = f"the project was not installed ({setup_problem})" if setup_problem else "the project is not installed"
    return (
        f"it would import {name} from {where}, another copy than the repository's own: {why}; put the command that "
        'installs it in `setup:` in .github/ai-fix.yml (e.g. `setup: ["python -m pip install -e ."]`)'
    )
