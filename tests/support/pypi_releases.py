"""Real bugs from real projects: a PyPI source release with the fix its next release shipped, for end-to-end runs.

Each `Release` is a release pair: the base sdist becomes a git repository (what a user would bring,
with `.github/ai-fix.yml` naming one small test check and `sandbox.network: none`, no `setup:`),
and the scripted model applies the next release's own change: the test it added, then the code
change, taken from the diff between the two sdists. Both sdists are pinned by sha256 and fetched
once into `.cache/pypi-releases/` (`python -m tests.support.pypi_releases` fills it; a test that
finds it empty fetches itself), so a test can also show that every edit is the release's: its old
text is in the base release's file and its new text in the next release's.

The three cover the layouts ai-fix's offline setup guess must handle: flat (toolz: the package at
the root, a pyproject build), src (iniconfig: `src/iniconfig`, tests in `testing/`) and setup.py
only (inflection: one module, no pyproject.toml). For the src layout `host_python()` makes the
"host" Python a user's shell finds first, with the *next* iniconfig installed (where the bug is
fixed): a test that imported it instead of the repository's `src/` would pass on the base code.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bot.eval.pypi import sha256_of
from bot.model.scripted import Turn, call, turn
from tests.support.repos import git

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "pypi-releases"


@dataclass(frozen=True)
class Dist:
    """One file on PyPI, pinned: `pip download` fetches it, its sha256 must match."""

    name: str
    version: str
    sha256: str
    filename: str = ""
    """The wheel's file name; empty for an sdist (`name-version.tar.gz`)."""

    @property
    def file(self) -> str:
        return self.filename or f"{self.name}-{self.version}.tar.gz"

    @property
    def pip_args(self) -> list[str]:
        kind = ["--only-binary", ":all:"] if self.filename else ["--no-binary", ":all:"]
        return [*kind, f"{self.name}=={self.version}"]


@dataclass(frozen=True)
class Edit:
    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Release:
    """A bug as a release pair: `base` has it, `fixed` (the next release) fixed it with `test_edits` + `fix_edits`."""

    layout: str
    base: Dist
    fixed: Dist
    issue: str
    test_file: str
    fixed_file: str
    test_edits: tuple[Edit, ...]
    fix_edits: tuple[Edit, ...]
    criteria: tuple[tuple[str, str], ...]
    """(acceptance criterion as the issue words it, the added test that shows it)."""
    host: tuple[Dist, ...] = field(default=())
    """Wheels for the "host" Python, one of them another version of the project (empty: the test runner's Python)."""
    checks_config: str = ""
    """The repository's `.github/ai-fix.yml`, when not the one running the release's test file (`config`)."""

    @property
    def added_tests(self) -> list[str]:
        return [test for _, test in self.criteria]

    @property
    def check(self) -> str:
        return f"python -m pytest -q -p no:cacheprovider {self.test_file}"

    @property
    def config(self) -> str:
        default = f"checks:\n  - name: tests\n    run: {self.check}\n    timeout: 300\nsandbox:\n  network: none\n"
        return self.checks_config or default


TOOLZ = Release(
    layout="flat",
    base=Dist("toolz", "1.1.0", "27a5c770d068c110d9ed9323f24f1543e83b2f300a687b7891c1a6d56b697b5b"),
    fixed=Dist("toolz", "1.2.0", "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490"),
    issue=(
        "# interpose() raises on an empty sequence\n\n"
        "`list(toolz.interpose('a', []))` raises StopIteration instead of returning [].\n\n"
        "## Acceptance criteria\n- `list(interpose('a', []))` returns `[]`\n"
        "- The other tests in `toolz/tests/test_itertoolz.py` keep passing\n"
    ),
    test_file="toolz/tests/test_itertoolz.py",
    fixed_file="toolz/itertoolz.py",
    test_edits=(
        Edit(
            "toolz/tests/test_itertoolz.py",
            "def test_frequencies():\n",
            'def test_interpose_empty():\n    assert list(interpose("a", [])) == []\n\n\ndef test_frequencies():\n',
        ),
    ),
    fix_edits=(
        Edit(
            "toolz/itertoolz.py",
            "    [1, 'a', 2, 'a', 3]\n"
            '    """\n'
            "    inposed = concat(zip(itertools.repeat(el), seq))\n"
            "    next(inposed)\n"
            "    return inposed\n",
            "    [1, 'a', 2, 'a', 3]\n"
            '    >>> list(interpose("a", []))\n'
            "    []\n"
            '    """\n'
            "    inposed = concat(zip(itertools.repeat(el), seq))\n"
            "    try:\n"
            "        next(inposed)\n"
            "    except StopIteration:\n"
            "        return iter([])\n"
            "    return inposed\n",
        ),
    ),
    criteria=(("`list(interpose('a', []))` returns `[]`", "toolz/tests/test_itertoolz.py::test_interpose_empty"),),
)

INICONFIG = Release(
    layout="src",
    base=Dist("iniconfig", "2.3.0", "c76315c77db068650d49c5b56314774a7804df16fee4402c1f19d6d15d8c4730"),
    fixed=Dist("iniconfig", "2.3.1", "67f4b9c50da0dedf52af349e7749a80a9057a5031199791b906c3bb3ae878960"),
    issue=(
        "# An INI file saved with a UTF-8 BOM does not parse\n\n"
        "A file that starts with a byte order mark (Windows editors write one) raises `ParseError` "
        "in `IniConfig(path)` and `IniConfig.parse(path)`, and so does `data=` text starting with `\\ufeff`.\n\n"
        "## Acceptance criteria\n"
        "- `IniConfig(path)` parses a file that starts with a UTF-8 BOM\n"
        "- `IniConfig(name, data=...)` parses data that starts with `\\ufeff`\n"
        "- `IniConfig.parse(path)` parses a file that starts with a UTF-8 BOM\n"
        "- The existing tests in `testing/test_iniconfig.py` still pass\n"
    ),
    test_file="testing/test_iniconfig.py",
    fixed_file="src/iniconfig/_parse.py",
    test_edits=(
        Edit(
            "testing/test_iniconfig.py",
            '    assert "key" in config["section"]\n    assert config["section"]["key"] == "value"\n',
            '    assert "key" in config["section"]\n'
            '    assert config["section"]["key"] == "value"\n'
            "\n\n"
            "def test_utf8_bom_file(tmp_path: Path) -> None:\n"
            '    """Files saved with a UTF-8 BOM (common on Windows editors) must parse."""\n'
            '    path = tmp_path / "bom.ini"\n'
            '    path.write_bytes(b"\\xef\\xbb\\xbf[section]\\nkey = value\\n")\n'
            "    config = IniConfig(path)\n"
            '    assert config["section"]["key"] == "value"\n'
            "\n\n"
            "def test_utf8_bom_in_data_string() -> None:\n"
            '    config = IniConfig("x.ini", data="\\ufeff[section]\\nkey = value\\n")\n'
            '    assert config["section"]["key"] == "value"\n'
            "\n\n"
            "def test_parse_utf8_bom_file(tmp_path: Path) -> None:\n"
            '    path = tmp_path / "bom.ini"\n'
            '    path.write_bytes(b"\\xef\\xbb\\xbf[section]\\nkey = value\\n")\n'
            "    config = IniConfig.parse(path)\n"
            '    assert config["section"]["key"] == "value"\n',
        ),
    ),
    fix_edits=(
        Edit(
            "src/iniconfig/_parse.py",
            'from typing import NamedTuple\n\nfrom .exceptions import ParseError\n\nCOMMENTCHARS = "#;"\n',
            "from typing import Final\n"
            "from typing import NamedTuple\n\n"
            "from .exceptions import ParseError\n\n"
            'COMMENTCHARS = "#;"\n'
            'UTF8_BOM: Final = "\\N{BYTE ORDER MARK}"\n',
        ),
        Edit(
            "src/iniconfig/_parse.py",
            '    """\n    tokens = parse_lines(\n',
            '    """\n    data = data.removeprefix(UTF8_BOM)\n\n    tokens = parse_lines(\n',
        ),
    ),
    criteria=(
        (
            "`IniConfig(path)` parses a file that starts with a UTF-8 BOM",
            "testing/test_iniconfig.py::test_utf8_bom_file",
        ),
        (
            "`IniConfig(name, data=...)` parses data that starts with `\\ufeff`",
            "testing/test_iniconfig.py::test_utf8_bom_in_data_string",
        ),
        (
            "`IniConfig.parse(path)` parses a file that starts with a UTF-8 BOM",
            "testing/test_iniconfig.py::test_parse_utf8_bom_file",
        ),
    ),
    host=(
        Dist(
            "iniconfig",
            "2.3.1",
            "9121e2c1fdb355232495be3194c8dfe87ccc2d5dee45947b78e68f499790d7a7",
            "iniconfig-2.3.1-py3-none-any.whl",
        ),
        Dist(
            "pytest",
            "9.2.0",
            "07acdcf88ec174f907dc01af70bf52d49b014bbab03faeeade31c96b18c2e588",
            "pytest-9.2.0-py3-none-any.whl",
        ),
        Dist(
            "pluggy",
            "1.7.0",
            "7dd7b0d8832ba3cb632c306926ded123429211b83641b35dc5c41ad2d34f9bec",
            "pluggy-1.7.0-py3-none-any.whl",
        ),
        Dist(
            "packaging",
            "26.4",
            "81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2",
            "packaging-26.4-py3-none-any.whl",
        ),
        Dist(
            "pygments",
            "2.21.0",
            "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9",
            "pygments-2.21.0-py3-none-any.whl",
        ),
    ),
)

INFLECTION = Release(
    layout="setup.py",
    base=Dist("inflection", "0.3.0", "c6ab173181fd3bbee53187b7535f395ed802ef69d9f3bb5f8c2a5cdfb3e92d08"),
    fixed=Dist("inflection", "0.3.1", "18ea7fb7a7d152853386523def08736aa8c32636b047ade55f7578c4edeb16ca"),
    issue=(
        "# pluralize() gets 'human' and 'potato' wrong\n\n"
        "`inflection.pluralize('human')` gives `'humen'` and `inflection.pluralize('potato')` gives `'potatos'`.\n\n"
        "## Acceptance criteria\n"
        "- `pluralize('human')` returns `'humans'`\n"
        "- `pluralize('potato')` returns `'potatoes'`\n"
        "- No regressions\n"
    ),
    test_file="test_inflection.py",
    fixed_file="inflection.py",
    test_edits=(
        Edit(
            "test_inflection.py",
            '    ("tomato", "tomatoes"),\n',
            '    ("tomato", "tomatoes"),\n    ("potato", "potatoes"),\n',
        ),
        Edit(
            "test_inflection.py",
            '    ("database", "databases"),\n)\n',
            '    ("database", "databases"),\n    ("human", "humans")\n)\n',
        ),
    ),
    fix_edits=(
        Edit(
            "inflection.py",
            "    (r\"(?i)(buffal|tomat)o$\", r'\\1oes'),\n",
            "    (r\"(?i)(buffal|potat|tomat)o$\", r'\\1oes'),\n",
        ),
        Edit(
            "inflection.py",
            "_irregular('man', 'men')\n",
            "_irregular('man', 'men')\n_irregular('human', 'humans')\n",
        ),
    ),
    criteria=(
        ("`pluralize('human')` returns `'humans'`", "test_inflection.py::test_pluralize_singular[human-humans]"),
        ("`pluralize('potato')` returns `'potatoes'`", "test_inflection.py::test_pluralize_singular[potato-potatoes]"),
    ),
)

RELEASES = (TOOLZ, INICONFIG, INFLECTION)
DJANGO = Dist("Django", "5.1", "848a5980e8efb76eea70872fb0e4bc5e371619c70fffbe48e3e1b50b2c09455d")
"""A large real project (2,788 Python files): what `bench/index.py` indexes and `python_tags` is checked on."""


def _verified(path: Path, dist: Dist, fix: str) -> Path:
    digest = sha256_of(path)
    if digest != dist.sha256:
        raise RuntimeError(
            f"{path}: sha256 {digest}, but tests/support/pypi_releases.py pins {dist.name} {dist.version} "
            f"to {dist.sha256}: this is not the release the tests were written for ({fix})"
        )
    return path


def fetch(dist: Dist) -> Path:
    """The cached file, downloaded from PyPI when missing; raises when its sha256 is not the pinned one."""
    path = CACHE / dist.file
    if path.exists():
        return _verified(path, dist, "delete the file to fetch it again")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, *dist.pip_args],
            check=False,
            capture_output=True,
            text=True,
        )
        got = Path(tmp) / dist.file
        if done.returncode != 0 or not got.exists():
            raise RuntimeError(
                f"pip download of {dist.name}=={dist.version} gave no {dist.file} (exit {done.returncode}):\n"
                f"{done.stderr[-2000:]}"
            )
        _verified(got, dist, "PyPI served another file; it was not cached")
        shutil.move(got, path)
    return path


def fetch_all() -> Path:
    """Every pinned file in the cache; the cache folder."""
    for release in RELEASES:
        for dist in (release.base, release.fixed, *release.host):
            fetch(dist)
    return CACHE


def released_text(dist: Dist, path: str) -> str:
    """A file of an sdist, as the release shipped it."""
    with tarfile.open(fetch(dist)) as tar:
        member = tar.extractfile(f"{dist.name}-{dist.version}/{path}")
        assert member is not None, f"{path} is not a file in {dist.file}"
        return member.read().decode()


def released_files(dist: Dist) -> set[str]:
    """The paths an sdist holds, relative to its top folder."""
    prefix = f"{dist.name}-{dist.version}/"
    with tarfile.open(fetch(dist)) as tar:
        return {m.name.removeprefix(prefix) for m in tar.getmembers() if m.isfile()}


def project_repo(release: Release, root: Path) -> Path:
    """The base sdist made a git repository on `main`: no PKG-INFO or *.egg-info, `.github/ai-fix.yml` written."""
    with tarfile.open(fetch(release.base)) as tar:
        tar.extractall(root, filter="data")
    repo = root / f"{release.base.name}-{release.base.version}"
    (repo / "PKG-INFO").unlink()
    for info in sorted(repo.rglob("*.egg-info")):
        shutil.rmtree(info)
    (repo / ".github").mkdir(exist_ok=True)
    (repo / ".github" / "ai-fix.yml").write_text(release.config)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"{release.base.file} from PyPI")
    return repo


def script(release: Release) -> list[Turn]:
    """The scripted model's turns: a plan, the release's added test, its code change, a finish naming the tests."""
    edits = [
        turn(
            f"{'Add the test' if edit in release.test_edits else 'Fix'} in {edit.path}.",
            call(
                "str_replace_based_edit_tool", command="str_replace", path=edit.path, old_str=edit.old, new_str=edit.new
            ),
        )
        for edit in (*release.test_edits, *release.fix_edits)
    ]
    return [
        turn(
            "Plan the fix.",
            call(
                "plan",
                steps=[
                    {"do": "add a test that shows the bug", "done_when": "it fails on the current code"},
                    {"do": f"fix {release.fixed_file}", "done_when": "the tests pass"},
                ],
                impact=[release.fixed_file, release.test_file],
            ),
        ),
        *edits,
        turn(
            "Done.",
            call(
                "finish",
                summary=f"The fix {release.fixed.name} {release.fixed.version} shipped.",
                risks=[],
                criteria=[{"criterion": text, "test": test} for text, test in release.criteria],
            ),
        ),
    ]


def host_python(release: Release, root: Path) -> Path:
    """A virtual environment with `release.host` installed (pytest, and another version of the project). Its bin."""
    wheels = [fetch(dist) for dist in release.host]
    env = root / "host-python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "-q", "--no-index",
         "--no-deps", *map(str, wheels)],
        check=True, capture_output=True,
    )  # fmt: skip
    return env / "bin"


if __name__ == "__main__":
    print(f"PyPI releases in {fetch_all()}")
