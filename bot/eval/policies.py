"""The built-in calibration policies: models behind the same `Model` protocol, needing no key.

`oracle` writes the task's gold fix and, as its reproduction test, the hidden test files (`test_patch`),
then maps each criterion of the contract (read from its prompt, as a model reads it) to a FAIL_TO_PASS
test: the best an honest model could do, so the harness should accept it and the hidden tests pass.
`noop` makes one harmless edit and calls `finish`: nothing is fixed, so nothing should be accepted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.model.base import ModelRequest, ModelResponse, ToolCall
from bot.vocabulary import BEHAVIOUR

EDITOR = "str_replace_based_edit_tool"
NOOP_FILE = "AI-FIX-NOOP.md"
CONTRACT_HEADING = "## Task contract\n"
MAX_FINISHES = 3
"""A policy whose `finish` keeps being refused asks for a human instead, as a model out of ideas would."""


def contract_in(request: ModelRequest) -> dict[str, Any]:
    """The task contract the prompt carries (its stable layer), or {} when it cannot be read."""
    at = request.system.find(CONTRACT_HEADING)
    if at < 0:
        return {}
    try:
        doc, _ = json.JSONDecoder().raw_decode(request.system, at + len(CONTRACT_HEADING))
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


class Policy:
    """A scripted player of the loop's tools; subclasses say what each step does."""

    name = "policy"

    def __init__(self) -> None:
        self.steps = 0
        self.finishes = 0

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.purpose == "compress":
            return ModelResponse(model=request.model, text=f"{self.name}: nothing to remember", stop_reason="end_turn")
        self.steps += 1
        text, calls = self.step(request)
        tool_calls = [ToolCall(id=f"{self.name}_{self.steps}_{i}", name=n, input=c) for i, (n, c) in enumerate(calls)]
        return ModelResponse(model=request.model, text=text, tool_calls=tool_calls, stop_reason="tool_use")

    def close(self) -> None:
        """Nothing to close: a policy calls no API."""

    def step(self, request: ModelRequest) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        raise NotImplementedError

    def finish(self, summary: str, criteria: list[dict[str, str]]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        self.finishes += 1
        if self.finishes > MAX_FINISHES:
            ask = {"question": "finish keeps being refused; please take over", "reason": f"{self.name} policy"}
            return "Handing over.", [("ask_human", ask)]
        return "Asking the harness to verify.", [("finish", {"summary": summary, "criteria": criteria})]


class Oracle(Policy):
    name = "oracle"

    def __init__(self, files: Mapping[str, str | None], fail_to_pass: Sequence[str]) -> None:
        super().__init__()
        self.files = {p: t for p, t in files.items() if t is not None}
        """The gold fix and the hidden test files, as they read once applied (deletions and binaries left out)."""
        self.fail_to_pass = list(fail_to_pass)

    def step(self, request: ModelRequest) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        if self.steps == 1:
            plan = {
                "steps": [
                    {"do": "write the reference fix", "done_when": "the fix is in place"},
                    {"do": "add the reference tests", "done_when": "they fail on the base commit and pass after"},
                ],
                "impact": sorted(self.files),
            }
            return "Oracle: the reference fix and its tests.", [("plan", plan)]
        if self.steps == 2:
            edits: list[tuple[str, dict[str, Any]]] = [
                (EDITOR, {"command": "create", "path": path, "file_text": text}) for path, text in self.files.items()
            ]
            return "Writing the reference fix and tests.", edits
        return self.finish("The reference fix, with the tests that came with it.", self.criteria(request))

    def criteria(self, request: ModelRequest) -> list[dict[str, str]]:
        """Each criterion a test must show, mapped to a FAIL_TO_PASS test in turn."""
        stated = [
            c.get("text", "")
            for c in contract_in(request).get("acceptance_criteria", [])
            if c.get("origin") != "derived" and c.get("kind") == BEHAVIOUR
        ]
        tests = self.fail_to_pass
        return [{"criterion": text, "test": tests[i % len(tests)]} for i, text in enumerate(stated) if tests]


class Noop(Policy):
    name = "noop"

    def step(self, request: ModelRequest) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        if self.steps == 1:
            plan = {"steps": [{"do": "make one harmless edit", "done_when": "it is made"}], "impact": [NOOP_FILE]}
            return "Noop: one harmless edit, then finish.", [("plan", plan)]
        if self.steps == 2:
            note = "This file was written by the `noop` calibration policy of `ai-fix eval`; it changes nothing.\n"
            return "One harmless edit.", [(EDITOR, {"command": "create", "path": NOOP_FILE, "file_text": note})]
        return self.finish("A harmless edit; nothing was fixed.", [])


POLICIES = ("oracle", "noop")
