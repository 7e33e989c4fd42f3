"""A package index on loopback serving two source releases of a tiny package, and the eval task built on them.

`tally` 1.0.0 splits words on single spaces; 1.0.1 fixes it (`str.split()`) and adds the two tests that
show it (repeated spaces, tabs). The sdists are made here with tarfile, like any setuptools sdist (one
top folder, PKG-INFO, a changelog); the index speaks PEP 691 JSON as PyPI's simple API does and counts
what it serves.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.support.repos import commit, git, make_repo
from tests.support.server import serve

BASE_CODE = '''"""Counting words."""


def words(text):
    """The words of `text`, in order."""
    return text.split(" ")


def count(text):
    return len(words(text))
'''
FIXED_CODE = BASE_CODE.replace('text.split(" ")', "text.split()")
BASE_TESTS = """from tally import count, words


def test_words():
    assert words("a b c") == ["a", "b", "c"]


def test_count():
    assert count("one two") == 2
"""
FIXED_TESTS = (
    BASE_TESTS
    + """

def test_repeated_spaces():
    assert words("a  b") == ["a", "b"]


def test_tabs_and_newlines():
    assert words("a\\tb\\nc") == ["a", "b", "c"]
"""
)
PROBLEM = """# words() returns empty strings for repeated spaces and keeps tabs

`tally.words("a  b")` returns `["a", "", "b"]`, and `words("a\\tb")` returns `["a\\tb"]`, so `count()`
is wrong on any text that is not separated by exactly one space.

## Acceptance criteria
- `words("a  b")` returns `["a", "b"]`
- `words("a\\tb\\nc")` returns `["a", "b", "c"]`
"""
FAIL_TO_PASS = ["tests/test_tally.py::test_repeated_spaces", "tests/test_tally.py::test_tabs_and_newlines"]
PASS_TO_PASS = ["tests/test_tally.py::test_words", "tests/test_tally.py::test_count"]


def pytest_check() -> dict[str, Any]:
    """The task's test check: the tests' own Python and pytest (mounted into the sandbox), no plugins."""
    run = f"env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider -o addopts= tests"
    return {"name": "tests", "run": run, "timeout": 120}


def sdist(version: str, code: str, tests: str) -> bytes:
    top = f"tally-{version}"
    files = {
        f"{top}/PKG-INFO": f"Metadata-Version: 2.1\nName: tally\nVersion: {version}\n",
        f"{top}/CHANGES.md": f"# {version}\n\n- words() splits on any whitespace\n",
        f"{top}/tally.py": code,
        f"{top}/tests/test_tally.py": tests,
        f"{top}/tally.egg-info/PKG-INFO": f"Name: tally\nVersion: {version}\n",
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


RELEASES = {"1.0.0": sdist("1.0.0", BASE_CODE, BASE_TESTS), "1.0.1": sdist("1.0.1", FIXED_CODE, FIXED_TESTS)}


def sha256(version: str) -> str:
    return hashlib.sha256(RELEASES[version]).hexdigest()


class FakeIndex:
    """`/simple/<project>/` (PEP 691 JSON) and `/files/<filename>`; `served` lists each request's path."""

    def __init__(self) -> None:
        self.served: list[str] = []
        self.app = Starlette(routes=[Route("/simple/{project}/", self.project), Route("/files/{filename}", self.file)])

    async def project(self, request: Request) -> Response:
        self.served.append(request.url.path)
        if request.path_params["project"] != "tally":
            return JSONResponse({"detail": "not found"}, status_code=404)
        files = [
            {"filename": f"tally-{v}.tar.gz", "url": f"../../files/tally-{v}.tar.gz", "hashes": {"sha256": sha256(v)}}
            for v in RELEASES
        ]
        body = {"meta": {"api-version": "1.1"}, "name": "tally", "files": files}
        return Response(json.dumps(body), media_type="application/vnd.pypi.simple.v1+json")

    async def file(self, request: Request) -> Response:
        self.served.append(request.url.path)
        version = request.path_params["filename"].removeprefix("tally-").removesuffix(".tar.gz")
        if version not in RELEASES:
            return Response(status_code=404)
        return Response(RELEASES[version], media_type="application/gzip")


@contextmanager
def serve_index() -> Iterator[tuple[FakeIndex, str]]:
    """The index on loopback; yields it and its simple API's URL."""
    index = FakeIndex()
    with serve(index.app) as url:
        yield index, f"{url}/simple"


def task_row(instance_id: str = "tally-1.0.1", **changes: Any) -> dict[str, Any]:
    """The eval row of the fix, as the shipped set writes its rows (the lists JSON-encoded, as published)."""
    row: dict[str, Any] = {
        "instance_id": instance_id,
        "problem_statement": PROBLEM,
        "pypi": {
            "name": "tally",
            "base": "1.0.0",
            "fixed": "1.0.1",
            "base_sha256": sha256("1.0.0"),
            "fixed_sha256": sha256("1.0.1"),
        },
        "FAIL_TO_PASS": json.dumps(FAIL_TO_PASS),
        "PASS_TO_PASS": json.dumps(PASS_TO_PASS),
        "checks": [pytest_check()],
    }
    return row | changes


def swe_row(repos: Path, fixed_code: str = FIXED_CODE) -> dict[str, Any]:
    """The same fix as a SWE-bench row: `repos/tally__tally.git` (a bare mirror made with git), the base commit
    with a newer commit on top (which the run must not see), the gold fix and the hidden tests as diffs."""
    work = repos / "work"
    make_repo(work, {"tally.py": BASE_CODE, "tests/test_tally.py": BASE_TESTS})
    base = git(work, "rev-parse", "HEAD").strip()
    commit(work, {"tally.py": fixed_code}, "the fix")
    patch = git(work, "diff", base, "HEAD", "--", "tally.py")
    commit(work, {"tests/test_tally.py": FIXED_TESTS}, "the tests")
    test_patch = git(work, "diff", "HEAD~1", "HEAD", "--", "tests")
    git(repos, "clone", "-q", "--mirror", str(work), str(repos / "tally__tally.git"))
    row = task_row("tally__tally-1", repo="tally/tally", base_commit=base, patch=patch, test_patch=test_patch)
    row.pop("pypi")
    return row


def write_tasks(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


EVAL_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "eval-sdists"
"""Where CI keeps the sdists the shipped set pins (the tests that build tasks from PyPI share them)."""


def eval_cli(tmp_path: Path, tasks: str, *args: str, path: str | None = None) -> dict[str, Any]:
    """`ai-fix eval TASKS ARGS --sandbox bwrap --out tmp_path/out` in a child process, as a user runs it, with no
    provider settings and the shared sdist cache; its report.json (the run's output is in the message if it fails).
    `path`: the child's PATH (the tests' Python first, for rows that install nothing)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIFIX_", "ANTHROPIC_", "OPENAI_"))}
    env |= {"AIFIX_EVAL_CACHE": str(EVAL_CACHE), "AIFIX_WORK_DIR": str(tmp_path / "work")}
    if path is not None:
        env["PATH"] = path
    command = [sys.executable, "-m", "bot.commands.main", "eval", tasks, *args]
    done = subprocess.run(
        [*command, "--sandbox", "bwrap", "--out", str(tmp_path / "out")],
        check=False,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report: dict[str, Any] = json.loads((tmp_path / "out" / "report.json").read_text())
    return report
