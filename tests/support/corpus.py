"""The corpus of real projects ai-fix must set up and reproduce the green suite of, with no `.github/ai-fix.yml`.

Entry point (issue 34's CI test, and whoever measures the harness on real projects):

    from tests.support.corpus import CORPUS, reproduce
    done = reproduce(CORPUS[0], tmp_path)   # contract, setup report, baseline run, times

    .venv/bin/python -m tests.support.corpus            # fetch everything into .cache/corpus
    .venv/bin/python -m tests.support.corpus --run      # and reproduce each project's suite, a line per project

Each `Project` is a real release, pinned: a PyPI source release by sha256 (through `bot.eval.pypi`'s cache),
an npm tarball by its integrity hash, or the sources of a Debian package of a crate or a Go module by the
package's version (`scripts/setup.sh` installs them; crates.io and the Go module proxy are out of reach
here). It becomes a git repository as a clone would be: the release's files without the sdist's
`PKG-INFO` and `*.egg-info`, tagged with the release's version (so a VCS version plugin has to find it in
git), minus the test files `dropped` says (each with the reason), plus the Poetry or PDM lock file its
repository has (`lock`; made by the tool itself, `tests.support.locks`). Setup runs with the network, as
detected setup does, but only reaches what the release could have seen: PyPI files uploaded before the
cut-off `uploaded` (pip's `--uploaded-prior-to`, uv's `--exclude-newer`, given as the operator's sandbox
environment), so a release's suite meets the dependencies it was released against. Package caches
(pip's, npm's) are kept per project under `.cache/corpus/work`, as `ai-fix serve` keeps them per repository.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bot.checks.bound import SandboxChecks
from bot.checks.models import CheckRun, SetupReport
from bot.checks.setup import setup_key
from bot.commands.toolkit import toolkit
from bot.contract.build import build_contract, snapshot_from_markdown
from bot.contract.files import LocalRepoFiles
from bot.contract.models import TaskContract
from bot.eval.pypi import SdistCache, copy_source, unpack
from bot.model.scripted import ScriptedModel
from bot.sandbox.base import SandboxJob
from bot.settings import load_settings
from bot.workspace.opening import local
from tests.support.locks import lock_file
from tests.support.repos import commit, git
from tests.support.sandbox import build_test_image

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "corpus"
INDEX = "https://pypi.org/simple"
ISSUE = "# The suite as it is\n\n## Acceptance criteria\n- the project's own tests pass on the base commit\n"

Ecosystem = Literal["python", "node", "go", "rust"]


@dataclass(frozen=True)
class Project:
    name: str
    ecosystem: Ecosystem
    version: str
    pin: str
    """sha256 of a PyPI sdist, `sha512-…` integrity of an npm tarball, the Debian package's version."""
    covers: str
    """What of issue 34 it shows (the cause it had, the layout)."""
    package: str = ""
    """The PyPI or npm name, or the Debian package, when not `name`."""
    source: str = ""
    """Debian: the folder the package installs the sources in."""
    tag: str = ""
    """The git tag of the release, as its repository has it (default: the version)."""
    uploaded: str = ""
    """Dependencies are taken as PyPI had them before this moment (a day after the release)."""
    dropped: tuple[str, ...] = ()
    why_dropped: str = ""
    lock: str = ""
    """`poetry.lock` or `pdm.lock`: the lock file its repository has and its sdist does not, made by the tool
    (`tests.support.locks`)."""

    @property
    def slug(self) -> str:
        return f"corpus/{self.name}"


P = Project
CORPUS: tuple[Project, ...] = (
    P("pluggy", "python", "1.6.0", "7dcc130b76258d33b90f61b658791dede3486c3e6bfb003ee5c9bfb396dd22f3",
      "setuptools-scm version; the test extra from tox's extras; ruff and mypy pinned by pre-commit; src layout; "
      "pytest brings the released pluggy", uploaded="2025-05-16T00:00:00Z"),
    P("structlog", "python", "25.4.0", "186cd1b0a8ae762e29417095664adf1d6a31702160a46dacb7796ea82f7409e4",
      "hatch-vcs version; PEP 735 dependency groups named by tox (freezegun, pretend); mypy from its own tox "
      "environment with its typing group", uploaded="2025-06-03T00:00:00Z"),
    P("toolz", "python", "1.0.0", "2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02",
      "versioneer version; setup.py only; tests inside the package", uploaded="2024-10-05T00:00:00Z"),
    P("python-dateutil", "python", "2.9.0.post0", "37dd54208da7e1cd875388217d5e00ebd4179249f90fb72437e91a35459a0ad3",
      "setuptools-scm version; requirements-dev.txt (freezegun, hypothesis); tox's nested {posargs: ...}",
      uploaded="2024-03-02T00:00:00Z"),
    P("humanize", "python", "4.12.3", "8430be3a615106fdfceb0b2c1b41c4c98c6b0fc5cc59663a5539b111dd325fb0",
      "hatch-vcs version; the tests extra (freezegun) from tox; ruff pinned by pre-commit; mypy's tox environment",
      uploaded="2025-05-01T00:00:00Z"),
    P("platformdirs", "python", "4.3.8", "3d512d96e16bcb959a814c9f348431070822a6496326a4be0911c40b5a74c2bc",
      "hatch-vcs version; pytest-mock's `mocker` from the test extra", uploaded="2025-05-08T00:00:00Z"),
    P("click", "python", "8.2.1", "27c491cc05d968d271d5a1db13e3b5a184636d9d930f148c50b038f0d0646202",
      "uv.lock synced frozen with the tests group", uploaded="2025-05-21T00:00:00Z",
      dropped=("tests/test_utils.py",),
      why_dropped="its echo_via_pager cases fail on this machine outside any sandbox too"),
    P("blinker", "python", "1.9.0", "b4ce2265a7abece45e7cc896e98dbebe6cead56bcf805a3d23136d145f5445bf",
      "pip-tools pins (requirements/tests.txt) named by tox's deps; pytest-asyncio", uploaded="2024-11-09T00:00:00Z"),
    P("itsdangerous", "python", "2.2.0", "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173",
      "pip-tools pins through tox; mypy from tox's typing environment (requirements/typing.txt)",
      uploaded="2024-04-17T00:00:00Z"),
    P("cachetools", "python", "6.1.0", "b4c4f404392848db3ce7aac34950d17be4d864da4b8b66911008e430bc544587",
      "tox deps; flake8 (multiprocessing: /dev/shm under bwrap)", uploaded="2025-06-17T00:00:00Z"),
    P("unearth", "python", "0.17.5", "a19e1c02e64b40518d088079c7416fc41b45a648b81a4128aac02597234ee6ba",
      "pdm.lock synced with the PDM dev-dependencies group for tests (pdm installed); pdm-backend's editable build",
      uploaded="2025-04-10T00:00:00Z", lock="pdm.lock"),
    P("tomlkit", "python", "0.13.3", "430cf247ee57df2b94ee3fbe588e71d362a941ebb545dec29b53961d61add2a1",
      "poetry.lock installed by the Poetry that wrote it, with the dev group", uploaded="2025-06-06T00:00:00Z",
      lock="poetry.lock", dropped=("tests/toml-test/gen-multi.py",),
      why_dropped="tests/toml-test is a git submodule in the project's repository, so its ruff never sees this script"),
    P("idna", "python", "3.10", "12f65c9b470abda6dc35cf8e63cc574b1c52b11df2c86030af0ac09b01b13ea9",
      "flit; pytest named in pyproject only", tag="v3.10", uploaded="2024-09-16T00:00:00Z"),
    P("path-browserify", "node", "1.0.1",
      "sha512-b7uo2UCUOYZcnF/3ID0lulOJi/bafxa1xPe7ZPsammBSpjSWQkjNxlt635YGS2MiR9GjvuXCtz2emr3jbsz98g==",
      "npm without a lock file (tape); node under the default memory limit"),
    P("fnv", "rust", "1.0.7", "1.0.7-1", "rustup's cargo under bwrap (RUSTUP_HOME)", package="librust-fnv-dev",
      source="/usr/share/cargo/registry/fnv-1.0.7"),
    P("go-cmp", "go", "0.5.9", "0.5.9-1", "Debian's Go toolchain under bwrap; a module with no dependencies",
      package="golang-github-google-go-cmp-dev", source="/usr/share/gocode/src/github.com/google/go-cmp", tag="v0.5.9"),
)  # fmt: skip


def _pypi(project: Project, into: Path) -> None:
    with SdistCache(CACHE / "sdists", INDEX) as sdists:
        archive = sdists.fetch(project.package or project.name, project.version, project.pin)
    with tempfile.TemporaryDirectory() as tmp:
        copy_source(unpack(archive, Path(tmp) / "x"), into)


def npm_tarball(project: Project) -> Path:
    """The npm tarball, fetched once with `npm pack` and checked against its integrity hash."""
    name = project.package or project.name
    cached = CACHE / "npm" / f"{name}-{project.version}.tgz"
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cached.parent) as tmp:
            subprocess.run(["npm", "pack", "-q", f"{name}@{project.version}"], cwd=tmp, check=True, capture_output=True)
            [got] = Path(tmp).glob("*.tgz")
            _check_integrity(got, project)
            got.replace(cached)
    return _check_integrity(cached, project)


def _check_integrity(path: Path, project: Project) -> Path:
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()
    if integrity != project.pin:
        raise RuntimeError(f"{path}: integrity {integrity}, but the corpus pins {project.pin} for {project.name}")
    return path


def _debian(project: Project, into: Path) -> None:
    shown = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", project.package], capture_output=True, text=True, check=False
    )
    if shown.stdout != project.pin:
        raise RuntimeError(
            f"{project.package} {shown.stdout or 'is not installed'}; the corpus pins {project.pin}: "
            "run ./scripts/setup.sh (it installs the Debian packages the corpus reads)"
        )
    shutil.copytree(project.source, into, dirs_exist_ok=True)


def make_repo(project: Project, root: Path, *, locked: bool = True) -> Path:
    """The release made a git repository on `main`, tagged with its version, without what `dropped` names, with
    its lock file unless not `locked`."""
    repo = root / project.name
    repo.mkdir(parents=True)
    if project.ecosystem == "python":
        _pypi(project, repo)
        if project.lock and locked:
            lock = lock_file(f"{project.name}-{project.version}", repo, project.lock, project.uploaded, CACHE)
            shutil.copyfile(lock, repo / project.lock)
    elif project.ecosystem == "node":
        subprocess.run(["tar", "-xzf", str(npm_tarball(project)), "-C", str(repo), "--strip-components=1"], check=True)
    else:
        _debian(project, repo)
    for path in project.dropped:
        (repo / path).unlink()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{project.name} {project.version}")
    git(repo, "tag", "-a", project.tag or project.version, "-m", f"{project.name} {project.version}")
    return repo


@dataclass
class Reproduced:
    project: Project
    contract: TaskContract
    setup: SetupReport
    baseline: CheckRun
    setup_s: float
    baseline_s: float
    workspace: Path
    """The job's work tree, with the environment setup made (`.ai-fix-env`)."""

    @property
    def green(self) -> bool:
        """The project's own test check passed at the baseline."""
        return any(c.status == "pass" and c.name in TEST_CHECKS for c in self.baseline.results)

    def line(self) -> str:
        checks = ", ".join(f"{r.name} {r.status}" for r in self.baseline.results)
        return f"{self.project.name}: setup {self.setup.status} in {self.setup_s:.1f} s; {checks} in {self.baseline_s:.1f} s"


TEST_CHECKS = ("pytest", "unittest", "npm-test", "go-test", "cargo-test")


def environment(project: Project) -> dict[str, str]:
    """The operator's sandbox environment for the project: PyPI as it was at the release (see the docstring)."""
    if not project.uploaded:
        return {}
    return {"PIP_UPLOADED_PRIOR_TO": project.uploaded, "UV_EXCLUDE_NEWER": project.uploaded}


def reproduce(project: Project, root: Path, *, kind: str = "bwrap", work: Path = CACHE / "work") -> Reproduced:
    """Build the contract with no `.github/ai-fix.yml`, open the sandbox as a job does, run setup and the baseline.

    `kind` podman: in the test image (`tests.support.sandbox`), which a `.github/ai-fix.yml` naming only the image
    selects (setup and checks are still detected), with the host's /usr and Python mounted as the tests do.
    """
    repo = make_repo(project, root / "repos")
    env, ro_paths = environment(project), []
    if kind == "podman":
        commit(repo, {".github/ai-fix.yml": f"sandbox:\n  image: {build_test_image()}\n"}, "the test image")
        base = Path(sys.base_prefix).resolve()
        env["PATH"] = f"{base}/bin:/usr/local/bin:/usr/bin:/bin"
        # The image has no /etc of its own: the host's certificates (a proxy's CA among them) for pip and uv.
        env["PIP_CERT"] = env["SSL_CERT_FILE"] = "/etc/ssl/certs/ca-certificates.crt"
        ro_paths = [Path("/usr"), base, Path("/etc/ssl")]
    contract = build_contract(snapshot_from_markdown(ISSUE, str(repo)), LocalRepoFiles(repo))
    workspace = local(repo, root / "jobs" / project.name, branch=f"ai-fix/local-corpus-{project.name}")
    settings = load_settings(work_dir=work, sandbox_env=env, sandbox_ro_paths=ro_paths)
    kit = toolkit(settings, model=lambda _choice: ScriptedModel([]), sandbox=kind)
    job = SandboxJob(repo=project.slug, commands=contract.commands(), setup_key=setup_key(contract, workspace.path))
    sandbox = kit.open_sandbox(workspace.path, contract.sandbox, job)
    try:
        checks = SandboxChecks(sandbox, contract, [], described=workspace.describe())
        began = time.monotonic()
        setup = checks.setup()
        prepared = time.monotonic()
        baseline = checks.baseline(workspace.base_sha)
    finally:
        sandbox.close()
    return Reproduced(project, contract, setup, baseline, prepared - began, time.monotonic() - prepared, workspace.path)


def fetch_all() -> Path:
    """Every release the corpus pins, in the cache (Debian packages are checked, `scripts/setup.sh` installs them)."""
    with tempfile.TemporaryDirectory() as tmp:
        for project in CORPUS:
            make_repo(project, Path(tmp))
    return CACHE


def main() -> int:
    parser = argparse.ArgumentParser(description="fetch the corpus, or reproduce each project's suite (--run)")
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--kind", default="bwrap")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    if not args.run:
        print(f"corpus in {fetch_all()}")
        return 0
    chosen = [p for p in CORPUS if not args.names or p.name in args.names]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(lambda p: reproduce(p, Path(tmp) / p.name, kind=args.kind), chosen))
    for result in done:
        print(result.line())
    green = sum(r.green for r in done)
    print(f"{green} of {len(done)} suites green; median setup {statistics.median(r.setup_s for r in done):.1f} s")
    return 0 if green == len(done) else 1


if __name__ == "__main__":
    sys.exit(main())
