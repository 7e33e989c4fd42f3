"""The execution loop: `run()` repeats `step()`; every way out is a `RunEnded` carrying the outcome.

The model only proposes the next action. The harness decides whether it runs (policy, patch gate,
limits), runs the project's own checks, and decides when the task is done: `finish` is verified by
running every contract check. Each step is appended to the trace as it happens.

Where the parts live: the collaborators and their seams in `harness`, the run's state in `state`,
the exits in `exits`, setup and baseline in `preflight`, the request in `prompt`, model calls and
their cost in `accounting`, limits in `budget`, the tools in `tools`, the progress policy in
`policy` (applied by `steering`) and the RunResult in `ending`.
"""

from __future__ import annotations

from bot.errors import AiFixError
from bot.loop.accounting import ask
from bot.loop.budget import check_limits
from bot.loop.ending import conclude, interrupted
from bot.loop.exits import Failed, RunEnded
from bot.loop.harness import Harness
from bot.loop.history import compress_history
from bot.loop.preflight import prepare
from bot.loop.prompt import build_request
from bot.loop.records import StepRecord
from bot.loop.result import RunResult
from bot.loop.state import RunState
from bot.loop.tools import execute, no_tool_call


class Loop:
    def __init__(self, harness: Harness, state: RunState | None = None) -> None:
        self.h = harness
        self.state = state or RunState.begin(harness)

    def run(self) -> RunResult:
        try:
            prepare(self.h, self.state)
            while True:
                self.step()
        except RunEnded as end:
            return conclude(self.h, self.state, end)
        except AiFixError as exc:
            return conclude(self.h, self.state, Failed(f"{type(exc).__name__}: {exc}"))
        except BaseException as exc:
            interrupted(self.h, self.state, exc)
            raise

    def step(self) -> None:
        """Check the limits, query the model, execute its tool calls; the step is traced however it ends."""
        h, state = self.h, self.state
        check_limits(h, state)
        began = h.clock()
        record = StepRecord(step=state.meter.steps + 1)
        try:
            compress_history(h, state, record)
            response = ask(h, state, build_request(h, state, record), record)
            state.meter.step_done()
            record.intent = response.text
            state.notes.new_step()
            if not response.tool_calls:
                no_tool_call(h, state, record)
            for call in response.tool_calls:
                execute(h, state, call, response.text, record)
        finally:
            record.duration_s = round(h.clock() - began, 4)
            state.notes.step_ended(record.summary())
            h.trace.append(record)
            h.keep_spent(state.meter.spent(h.clock()))
