"""The model resolves the conflicted hunks of a merge, and nothing else: it sees each hunk (ours, the common
ancestor, theirs, a few lines around) and answers with the lines that replace it; the harness puts them in,
refuses an answer that leaves a hunk open or markers behind, and says why when the checks fail after.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Any

from bot.errors import AiFixError
from bot.loop.accounting import Account, BudgetReached, metered_cost
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
    """One conversation with the model about one merge's conflicts; every call goes through the job's `account`
    (the trace, the budget, the cost)."""

    def __init__(
        self,
        model: Model,
        name: str,
        files: Sequence[ConflictedFile],
        redact: Callable[[str], str],
        base: str,
        account: Account,
    ) -> None:
        self.model, self.name, self.files, self.redact, self.account = model, name, list(files), redact, account
        shown = [_hunk_text(f.path, h, len(f.hunks)) for f in self.files for h in f.hunks]
        intro = f"Merging `{base}` into the pull request's branch left these conflicts:"
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": redact("\n\n".join([intro, *shown]))}]
        self.answers = 0
        self.summary = ""
        self._open: ToolCall | None = None

    @property
    def cost(self) -> Cost:
        """What the resolver's calls cost the job so far (its attempts' included)."""
        cost = metered_cost(self.account.meter, model=self.name, small_model=self.name, now=self.account.clock())
        return cost.model_copy(update={"rounds": 1})

    def ask(self) -> dict[str, str]:
        """The resolved text of each conflicted file; ResolveFailed after MAX_ANSWERS unusable answers or once the
        job's budget is spent."""
        while self.answers < MAX_ANSWERS:
            try:
                call = self._call()
            except BudgetReached as exc:
                raise ResolveFailed(str(exc)) from exc
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
            purpose="resolve",
        )
        response = self.account.call(self.model, request)
        self.answers += 1
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
