"""The first, simple context provider: a file list as the map, and the files the task names as slices."""

from __future__ import annotations

import re
from pathlib import Path

from bot.context.base import Query, Retrieved, Slice
from bot.loop.search import text_files
from bot.model.base import estimate_tokens

PATHLIKE = re.compile(r"[\w./-]+\.[A-Za-z0-9]+")


class NamedFilesContext:
    """`ContextProvider` over the workspace: no index, nothing to refresh."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def repo_map(self, budget_tokens: int) -> str:
        lines, used = [], 0
        for rel in text_files(self.root):
            used += estimate_tokens(rel) + 1
            if used > budget_tokens:
                lines.append("... (more files; use search_code)")
                break
            lines.append(rel)
        return "\n".join(lines)

    def retrieve(self, query: Query, budget_tokens: int) -> Retrieved:
        files = text_files(self.root)
        mentioned = set(PATHLIKE.findall(f"{query.text}\n{query.failure}"))
        named = [f for f in files if f in mentioned or f.rsplit("/", 1)[-1] in mentioned]
        slices, rendered, used = [], [], 0
        for rel in named:
            text = (self.root / rel).read_text(errors="replace")
            block = f"### {rel} (named in the task or failure)\n{text}"
            if used + estimate_tokens(block) > budget_tokens:
                break
            used += estimate_tokens(block)
            slices.append(
                Slice(path=rel, start_line=1, end_line=text.count("\n") + 1, reason="named in the task or failure", text=text)
            )
            rendered.append(block)
        return Retrieved(files=[(f, 1.0) for f in named], slices=slices, rendered="\n\n".join(rendered), tokens=used)

    def refresh(self) -> None:
        """Reads the workspace on every call, so there is nothing to re-index."""
