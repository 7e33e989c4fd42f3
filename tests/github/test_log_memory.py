"""A huge CI log costs time, not memory: `CiApi.job_log` streams the log behind GitHub's redirect and keeps its
tail. The log (1 GB) is served by a real server on loopback; the client runs in a process of its own so its
peak resident memory (`ru_maxrss`) can be read before and after."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from bot.github.ci import MAX_LOG_BYTES
from tests.support.server import serve

LOG_BYTES = 1 << 30
CHUNK = b"x" * 1023 + b"\n"
END = b"the last line of the log\n"

CLIENT = """
import json, resource, sys
from githubkit import GitHub, TokenAuthStrategy
from pydantic import SecretStr
from bot.github.ci import CiApi
from bot.github.client import RepoClient

client = RepoClient(GitHub(TokenAuthStrategy("ghs_test"), base_url=sys.argv[1]), "octo/repo", SecretStr("ghs_test"))
api = CiApi(client)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
log = api.job_log(7)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"growth_kib": after - before, "chars": len(log), "end": log[-40:]}))
"""


def log_app() -> Starlette:
    async def redirect(request: Request) -> Response:
        if request.path_params["job_id"] != "7":
            return Response(status_code=404)
        return RedirectResponse(f"{request.base_url}signed-logs/7", status_code=302)

    async def body() -> AsyncIterator[bytes]:
        for _ in range((LOG_BYTES - len(END)) // len(CHUNK) // 64):
            yield CHUNK * 64
        yield END

    async def signed(request: Request) -> Response:
        return StreamingResponse(body(), media_type="text/plain")

    return Starlette(
        routes=[
            Route("/repos/octo/repo/actions/jobs/{job_id}/logs", redirect),
            Route("/signed-logs/7", signed),
        ]
    )


def test_a_1_gb_log_is_read_with_bounded_memory_and_its_tail_kept() -> None:
    with serve(log_app()) as url:
        done = subprocess.run(
            [sys.executable, "-c", CLIENT, url + "/"], capture_output=True, text=True, timeout=600, check=False
        )
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout)
    assert measured["end"].endswith(END.decode()), "the tail of the log is what is kept"
    assert MAX_LOG_BYTES - 2 * len(CHUNK) <= measured["chars"] <= MAX_LOG_BYTES
    assert measured["growth_kib"] < 64 * 1024, f"peak RSS grew {measured['growth_kib'] / 1024:.0f} MB"
