"""Data files: the commented config and the issue form `ai-fix init` writes, and comment examples."""

from __future__ import annotations

from importlib.resources import files


def template(name: str) -> str:
    """The text of one data file in this folder."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")
