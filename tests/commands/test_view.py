"""`ai-fix view TRACE.jsonl`: the run viewer's page for a local run, through the installed command."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from bot.loop.records import EndRecord, StartRecord, StepRecord
from bot.loop.trace import Trace

AI_FIX = str(Path(sys.executable).parent / "ai-fix")


def test_view_serves_the_page_and_follows_the_trace_until_its_end(tmp_path: Path) -> None:
    path = tmp_path / "out" / "trace.jsonl"
    trace = Trace(path, [])
    trace.append(StartRecord(title="Local fix", model="m", small_model="s", model_reason="", branch="b", base_sha="0"))
    trace.append(StepRecord(step=1, intent="plan the fix"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIFIX_")}
    env["AIFIX_ANTHROPIC_API_KEY"] = "sk-ant-local-key-0123456789"
    view = subprocess.Popen(
        [AI_FIX, "view", str(path), "--port", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert view.stdout is not None
        lines = [view.stdout.readline(), view.stdout.readline()]
        assert lines[0].strip() == f"ai-fix view: {path}"
        url = re.search(r"open (http://127\.0\.0\.1:\d+/)", lines[1]).group(1)  # type: ignore[union-attr]
        page = httpx.get(url, timeout=10)
        assert page.status_code == 200 and "Local fix" in page.text and 'data-step="1"' in page.text
        assert 'data-events="events?from=2"' in page.text
        with httpx.stream("GET", url + "events?from=2", timeout=20) as stream:
            trace.append(StepRecord(step=2, intent="the key sk-ant-local-key-0123456789 must not show"))
            trace.append(EndRecord(outcome="accepted", reason="all checks pass", steps=2, head_sha="abc"))
            body = "".join(stream.iter_text())  # the stream ends after its end event
        assert "event: update" in body and body.rstrip().endswith("event: end\ndata: {}")
        assert 'data-step=\\"2\\"' in body and "sk-ant-local" not in body and "[REDACTED]" in body
        view.send_signal(signal.SIGINT)
        assert view.wait(timeout=10) == 0
    finally:
        if view.poll() is None:
            view.kill()
        view.communicate()  # waits, and closes the pipes it reads


def test_view_of_a_folder_that_does_not_exist_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [AI_FIX, "view", str(tmp_path / "nowhere" / "trace.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("ai-fix view: ") and "pass the trace.jsonl of a run" in done.stderr
