"""The model resolves the conflicted hunks of a merge, and nothing else: it sees each hunk (ours, the common
ancestor, theirs, a few lines around) and answers with the lines that replace it; the harness puts them in,
refuses an answer that leaves a hunk open or markers behind, and says why when the checks fail after.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Any

from bot.errors import AiFixError
from bot.loop.result import Cost
from bot.model.base import Model, ModelRequest, ToolCall
from bot.workspace.conflicts import ConflictedFile, ConflictError, Hunk, resolve

TOOL = "resolve_conflicts"
MAX_ANSWERS = 3
"""Model answers per merge (a refused answer or failing checks ask for another)."""


class ResolveFailed(AiFixError):
    """The model gave no usable resolution within MAX_ANSWERS answers."""


@cache
def _prompt(name: str) -> str:
    return resources.files("bot.job.prompts").joinpath(name).read_text()


def _block(label: str, lines: Sequence[str]) -> str:
    return f"{label}:\n" + ("\n".join(lines) if lines else "(no lines)")


def _hunk_text(path: str, hunk: Hunk, total: int) -> str:
    return "\n".join(
        [
            f"## `{path}`, conflict {hunk.n} of {total} (line {hunk.start})",
            _block("lines before", hunk.before),
            _block("ours (the pull request's branch)", hunk.ours),
            _block("base (the common ancestor)", hunk.base),
            _block("theirs (the base branch)", hunk.theirs),
            _block("lines after", hunk.after),
        ]
    )


class Resolver:
    """One conversation with the model about one merge's conflicts."""

    def __init__(
        self, model: Model, name: str, files: Sequence[ConflictedFile], redact: Callable[[str], str], base: str
    ) -> None:
        self.model, self.name, self.files, self.redact = model, name, list(files), redact
        shown = [_hunk_text(f.path, h, len(f.hunks)) for f in self.files for h in f.hunks]
        intro = f"Merging `{base}` into the pull request's branch left these conflicts:"
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": redact("\n\n".join([intro, *shown]))}]
        self.cost = Cost(model=name, small_model=name, rounds=1, usd=0.0)
        self.answers = 0
        self.summary = ""
        self._open: ToolCall | None = None
        self._began = time.monotonic()

    def ask(self) -> dict[str, str]:
        """The resolved text of each conflicted file; ResolveFailed after MAX_ANSWERS unusable answers."""
        while self.answers < MAX_ANSWERS:
            call = self._call()
            if call is None:
                continue
            try:
                if call.error:
                    raise ValueError(f"the arguments could not be read ({call.error})")
                texts = self.apply(call.input)
            except (ConflictError, ValueError, TypeError) as exc:
                self.reject(f"not applied: {exc}. Answer again with every conflict resolved.")
                continue
            self.summary = str(call.input.get("summary") or "")
            return texts
        raise ResolveFailed(f"the model gave no usable resolution in {MAX_ANSWERS} answers")

    def reject(self, why: str) -> None:
        """Tell the model why its last answer is not kept (then `ask` again)."""
        if self._open is not None:
            result = {
                "type": "tool_result",
                "tool_use_id": self._open.id,
                "content": self.redact(why),
                "is_error": True,
            }
            self.messages.append({"role": "user", "content": [result]})
            self._open = None

    def apply(self, answer: dict[str, Any]) -> dict[str, str]:
        """Each conflicted file's text with the answer's resolutions put in; ConflictError or ValueError saying why not."""
        chosen: dict[str, dict[int, str]] = {f.path: {} for f in self.files}
        for item in answer.get("resolutions") or []:
            path, n, text = item.get("file"), item.get("conflict"), item.get("text")
            if path not in chosen:
                raise ConflictError(f"{path!r} is not one of the conflicted files ({', '.join(chosen)})")
            if not isinstance(n, int) or not isinstance(text, str):
                raise ValueError(f"each resolution needs a conflict number and a text (got {item!r:.200})")
            chosen[path][n] = text
        return {f.path: resolve(f, chosen[f.path]) for f in self.files}

    def _call(self) -> ToolCall | None:
        """One model answer, added to the conversation; None (the model told to use the tool) when it has no call."""
        request = ModelRequest(
            model=self.name,
            system=_prompt("resolve.md"),
            messages=self.messages,
            tools=[json.loads(_prompt("resolve_tool.json"))],
            tool_choice={"type": "tool", "name": TOOL},
            max_tokens=8192,
        )
        response = self.model.complete(request)
        self.answers += 1
        self._account(response.usage.input_tokens, response.usage.output_tokens, response.cost_usd)
        self.cost.cache_read_tokens += response.usage.cache_read_tokens
        self.cost.cache_write_tokens += response.usage.cache_write_tokens
        call = next((c for c in response.tool_calls if c.name == TOOL), None)
        content: list[dict[str, Any]] = [{"type": "text", "text": response.text}] if response.text else []
        if call is None:
            self.messages.append({"role": "assistant", "content": content or [{"type": "text", "text": "(none)"}]})
            self.messages.append({"role": "user", "content": f"Answer with the {TOOL} tool."})
            return None
        content.append({"type": "tool_use", "id": call.id, "name": TOOL, "input": call.input})
        self.messages.append({"role": "assistant", "content": content})
        self._open = call
        return call

    def _account(self, tokens_in: int, tokens_out: int, usd: float | None) -> None:
        c = self.cost
        c.input_tokens += tokens_in
        c.output_tokens += tokens_out
        c.usd = None if usd is None or c.usd is None else c.usd + usd
        c.wall_s = round(time.monotonic() - self._began, 3)
