"""Progress: a bar redrawn in place on a terminal, one line per run elsewhere."""

from __future__ import annotations

import io

from bot.eval.models import HiddenResult, TaskRecord
from bot.eval.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def record(klass: str, usd: float | None) -> TaskRecord:
    hidden = HiddenResult(fail_to_pass={"t::a": "pass"}, pass_to_pass={"t::b": "pass"})
    return TaskRecord.model_validate(
        {
            "instance_id": "t1",
            "variant": "m",
            "model": "m",
            "config": "default",
            "class": klass,
            "outcome": "accepted",
            "hidden": hidden,
            "usd": usd,
            "wall_s": 2.5,
        }
    )


def test_on_a_terminal_one_bar_shows_runs_classes_and_spend() -> None:
    screen = Terminal()
    progress = Progress(4, screen, done=1)
    progress.start()
    progress.finished(record("incorrect", 0.25))
    progress.finished(record("automatic", 0.5))
    progress.close()
    text = screen.getvalue()
    last = text.rsplit("\r\x1b[K", 1)[1]
    assert last.startswith("[" + "#" * 18 + "." * 6 + "] 3/4 runs · incorrect 1 · automatic 1 · partial 0 · refused 0")
    assert "spent $0.7500" in last and text.endswith("\n") and text.count("\n") == 1


def test_elsewhere_each_run_is_a_line_and_an_unpriced_run_makes_the_spend_unknown() -> None:
    log = io.StringIO()
    progress = Progress(2, log)
    progress.start()
    progress.finished(record("automatic", None))
    assert log.getvalue() == (
        "[1/2] t1 m: automatic (accepted; hidden FAIL_TO_PASS 1/1, PASS_TO_PASS 1/1) unknown 2.5 s\n"
    )
    assert "spent unknown" in progress.line()
