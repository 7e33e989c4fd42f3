"""A repository's root as detection reads it: the listing, and each file read once."""

from __future__ import annotations

import re
import tomllib

from bot.contract.files import RepoFiles


class Root:
    """The root listing plus cached reads, so each rule stays a one-liner (setup detection reads through it too)."""

    def __init__(self, files: RepoFiles) -> None:
        self.files = files
        self.names = {p.rstrip("/") for p in files.list_dir("")}
        self._texts: dict[str, str] = {}

    def has(self, *names: str) -> bool:
        return any(n in self.names for n in names)

    def text(self, name: str) -> str:
        if name not in self._texts:
            self._texts[name] = (self.files.read_text(name) or "") if name in self.names else ""
        return self._texts[name]

    def pyproject(self) -> dict[str, object]:
        try:
            return tomllib.loads(self.text("pyproject.toml"))
        except tomllib.TOMLDecodeError:
            return {}

    def tool(self, name: str) -> bool:
        tool = self.pyproject().get("tool")
        return isinstance(tool, dict) and name in tool

    def ini_section(self, file: str, section: str) -> bool:
        return re.search(rf"^\[{re.escape(section)}\]", self.text(file), re.M) is not None
