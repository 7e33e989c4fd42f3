"""One job through the real `ai-fix serve` with `model.name: openai:...` in the repository's config: the
models come from the Chat Completions fake, the default (Anthropic) models are never called."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

from bot.commands.demo import sample
from tests.support.webhooks import REPO, labeled
from tests.support.world import FIX_SCRIPT, SECRETS, SENDER, start_world

MODEL = "openai:gpt-5.4-mini"


def test_a_job_runs_on_the_model_its_repository_names(tmp_path: Path) -> None:
    with ExitStack() as stack:
        world = start_world(tmp_path, stack, model=MODEL)
        title, _, body = sample()[1].partition("\n")
        title = title.removeprefix("# ").strip()
        world.github.add_issue(REPO, 1, title=title, body=body.strip(), author=SENDER, labels=("ai-fix",))
        payload = labeled(1, sender=SENDER)
        payload["issue"].update(title=title, body=body.strip())
        world.script(FIX_SCRIPT)
        task = world.wait(world.send("issues", payload).json()["job_id"], timeout=240)  # a shared, loaded machine
        assert task["status"] == "done", (task, world.log.read_text()[-3000:])
        [pr] = world.github.pulls_of(REPO)
        assert pr["draft"] is False and "return a + b" in world.git("show", f"{pr['head']['ref']}:calc.py")
        cost_row = next(line for line in pr["body"].splitlines() if line.startswith(f"| `{MODEL}`"))
        cells = [c.strip() for c in cost_row.strip("|").split("|")]
        cache_read, dollars = int(cells[5].replace(",", "")), cells[7]
        assert cache_read > 1024 and dollars.startswith("$0.0"), cost_row  # cached reads, priced from the table
        sent = [json.loads(b) for b in world.chat_api.bodies]
        assert len(sent) == len(FIX_SCRIPT) and {b["model"] for b in sent} == {"gpt-5.4-mini"}
        assert world.model_api.bodies == [], "the default Anthropic models were not called"
        assert {h["authorization"] for h in world.chat_api.headers} == {f"Bearer {SECRETS['AIFIX_OPENAI_API_KEY']}"}
        assert world.chat_api.violations == [] and world.github.violations == []
        assert world.leaks() == [], "a canary secret reached the fake GitHub or a fake model"
