"""What setuptools-scm's default scheme would give for the base commit, derived from `git describe` on the host."""

from __future__ import annotations

from bot.checks.vcs_version import OVERRIDES, derived_version, version_env


def test_a_tagged_commit_is_the_tag_s_version() -> None:
    assert derived_version("1.6.0-0-gc4ef6b7") == "1.6.0"
    assert derived_version("v25.4.0-0-g0123abc") == "25.4.0"
    assert derived_version("release-2.1-0-g0123abc") == "2.1"


def test_commits_after_a_tag_are_the_next_patch_s_dev_release() -> None:
    assert derived_version("1.6.0-3-gc4ef6b7") == "1.6.1.dev3+gc4ef6b7"
    assert derived_version("v2.0rc1-2-gabc1234") == "2.0rc1.dev2+gabc1234"


def test_no_tag_is_a_first_dev_release_and_nothing_is_nothing() -> None:
    assert derived_version("c4ef6b7") == "0.1.dev0+gc4ef6b7"
    assert derived_version("") == "" and version_env("") == {}


def test_every_plugin_s_override_gets_it() -> None:
    env = version_env("v1.2.3-0-gabcdef0")
    assert set(env) == set(OVERRIDES) and set(env.values()) == {"1.2.3"}
    assert "SETUPTOOLS_SCM_PRETEND_VERSION" in env and "PDM_BUILD_SCM_VERSION" in env
