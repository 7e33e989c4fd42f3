"""The version a VCS version plugin would compute, given to setup: the sandbox has the work tree, not its git.

setuptools-scm, hatch-vcs (which uses it), flit_scm, pdm-backend's scm source and
poetry-dynamic-versioning read the version from `git describe` at build time; the job's git directory
stays outside the sandbox (code there must never write it, `bot.workspace.jobgit`), so an editable
install would fail as in a tarball without `.git`. ai-fix runs `git describe` on the host
(`Workspace.describe`) and derives what setuptools-scm's default scheme gives: the tag's version on a
tagged commit, else the next patch's `.devN+gSHA`, or `0.1.dev0+gSHA` with no tag. Setup commands get
it in each plugin's own override variable; versioneer has none and falls back to `0+unknown`, which
installs. A snapshot reused on a later commit keeps the version it was made with.
"""

from __future__ import annotations

import re

OVERRIDES = (
    "SETUPTOOLS_SCM_PRETEND_VERSION",
    "VCS_VERSIONING_PRETEND_VERSION",
    "PDM_BUILD_SCM_VERSION",
    "POETRY_DYNAMIC_VERSIONING_BYPASS",
)
"""Each plugin's variable for a version given from outside."""
_DESCRIBED = re.compile(r"^(?P<tag>.+)-(?P<distance>\d+)-g(?P<sha>[0-9a-f]+)$")
_TAG_VERSION = re.compile(r"[vV]?(?P<version>\d+(?:\.\d+)*[^+]*)")


def derived_version(described: str) -> str:
    """The version for `git describe --tags --long --always` output ("" when there is none)."""
    described = described.strip()
    if not described:
        return ""
    m = _DESCRIBED.match(described)
    if m is None:  # no tag: `--always` gave the abbreviated commit
        return f"0.1.dev0+g{described}"
    tag = _TAG_VERSION.search(m["tag"])
    if tag is None:
        return f"0.1.dev{m['distance']}+g{m['sha']}"
    version, distance = tag["version"], int(m["distance"])
    if distance == 0:
        return version
    release = re.fullmatch(r"(\d+(?:\.\d+)*)", version)
    if release is None:  # a pre- or post-release tag: a dev release after it
        return f"{version}.dev{distance}+g{m['sha']}"
    parts = release[1].split(".")
    parts[-1] = str(int(parts[-1]) + 1)
    return f"{'.'.join(parts)}.dev{distance}+g{m['sha']}"


def version_env(described: str) -> dict[str, str]:
    """The variables that give the plugins the derived version (empty when there is none)."""
    version = derived_version(described)
    return dict.fromkeys(OVERRIDES, version) if version else {}
