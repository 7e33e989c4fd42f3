"""`replay:TRACE`: re-run a task from the model responses recorded in a trace."""

from __future__ import annotations

import json
from pathlib import Path

from bot.errors import ConfigError, ModelError
from bot.model.base import ModelRequest, ModelResponse


def recorded_responses(lines: list[str]) -> list[ModelResponse]:
    """Every model response in a trace, in call order (step and compression calls alike)."""
    out = []
    for line in lines:
        if not line.strip():
            continue
        record = json.loads(line)
        for call in record.get("model_calls", []):
            out.append(ModelResponse.model_validate(call["response"]))
    return out


class ReplayModel:
    """`Model` that answers each request with the next recorded response."""

    def __init__(self, responses: list[ModelResponse], *, source: str = "trace") -> None:
        self.responses = list(responses)
        self.source = source
        self.served = 0

    @classmethod
    def from_trace(cls, path: Path) -> ReplayModel:
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise ConfigError(
                f"replay:{path}: cannot read the trace ({exc.strerror}); pass the trace.jsonl a run wrote"
            ) from exc
        try:
            responses = recorded_responses(lines)
        except (ValueError, KeyError) as exc:
            raise ConfigError(f"replay:{path}: not an ai-fix trace ({exc}); pass the trace.jsonl a run wrote") from exc
        if not responses:
            raise ConfigError(
                f"replay:{path}: the trace holds no model responses; pass the trace.jsonl of a run that reached the model"
            )
        return cls(responses, source=str(path))

    def complete(self, request: ModelRequest) -> ModelResponse:
        if self.served >= len(self.responses):
            raise ModelError(
                f"replay of {self.source}: the run asked for response {self.served + 1} but only "
                f"{len(self.responses)} were recorded; the run diverged from the recording"
            )
        response = self.responses[self.served]
        self.served += 1
        # Marked so progress lines and traces never pass a replayed answer off as a live one.
        model = response.model if response.model.startswith("replay:") else f"replay:{response.model}"
        return response.model_copy(update={"model": model, "latency_s": 0.0, "retries": 0})

    def close(self) -> None:
        """Nothing to close: the responses are in memory."""
