"""A huge or hostile CI log costs bounded time and memory: `CiApi.job_log` streams the log (behind GitHub's redirect,
or answered directly), keeps its tail, reads at most MAX_LOG_READ bytes once decompressed and for at most
LOG_SECONDS, and reads an error's body only as far as its message needs. The logs are served by a real server on
loopback; the client runs in a process of its own so its peak resident memory (`ru_maxrss`) can be read before and
after, with the caps lowered where a test says so."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from bot.github.ci import MAX_LOG_BYTES
from tests.support.server import serve

LOG_BYTES = 1 << 30
DIRECT_BYTES = 256 << 20
CHUNK = b"x" * 1023 + b"\n"
END = b"the last line of the log\n"
BOMB_BYTES = 256 << 20
"""What the gzip bomb inflates to; it travels as about 250 KB."""

CLIENT = """
import json, resource, sys, time
import bot.github.ci as ci
from githubkit import GitHub, TokenAuthStrategy
from pydantic import SecretStr
from bot.github.client import GitHubStatusError, RepoClient

url, job, caps = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
for name, value in caps.items():
    setattr(ci, name, value)
client = RepoClient(GitHub(TokenAuthStrategy("ghs_test"), base_url=url), "octo/repo", SecretStr("ghs_test"))
api = ci.CiApi(client)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
began = time.monotonic()
try:
    log, error = api.job_log(job), ""
except GitHubStatusError as exc:
    log, error = "", str(exc)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {"growth_kib": after - before, "chars": len(log), "end": log[-80:], "error": error[:300]}
print(json.dumps(out | {"seconds": time.monotonic() - began}))
"""


def lines(total: int) -> AsyncIterator[bytes]:
    async def body() -> AsyncIterator[bytes]:
        for _ in range((total - len(END)) // len(CHUNK) // 64):
            yield CHUNK * 64
        yield END

    return body()


def bomb() -> bytes:
    """BOMB_BYTES of zeros, gzip-compressed."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1 << 20)
    return b"".join(packer.compress(block) for _ in range(BOMB_BYTES >> 20)) + packer.flush()


async def trickle() -> AsyncIterator[bytes]:
    for n in range(120):
        yield f"step {n}: still running\n".encode()
        await asyncio.sleep(0.5)


def log_app() -> Starlette:
    packed = bomb()

    async def logs(request: Request) -> Response:
        job = request.path_params["job_id"]
        if job == "7":
            return RedirectResponse(f"{request.base_url}signed-logs/7", status_code=302)
        if job == "8":  # answered directly, no redirect
            return StreamingResponse(lines(DIRECT_BYTES), media_type="text/plain")
        if job == "9":  # an error with a huge body
            return StreamingResponse(lines(DIRECT_BYTES), status_code=500, media_type="text/plain")
        if job == "10":
            return Response(packed, media_type="text/plain", headers={"Content-Encoding": "gzip"})
        if job == "11":
            return StreamingResponse(trickle(), media_type="text/plain")
        return Response(status_code=404)

    async def signed(request: Request) -> Response:
        return StreamingResponse(lines(LOG_BYTES), media_type="text/plain")

    return Starlette(
        routes=[
            Route("/repos/octo/repo/actions/jobs/{job_id}/logs", logs),
            Route("/signed-logs/7", signed),
        ]
    )


@pytest.fixture(scope="module")
def logs_url() -> Any:
    with serve(log_app()) as url:
        yield url + "/"


def read_log(url: str, job: int, **caps: float) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, url, str(job), json.dumps(caps)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    measured: dict[str, Any] = json.loads(done.stdout)
    return measured


@pytest.mark.parametrize(("job", "size"), [(7, LOG_BYTES), (8, DIRECT_BYTES)], ids=["redirected", "answered directly"])
def test_a_huge_log_is_read_with_bounded_memory_and_its_tail_kept(logs_url: str, job: int, size: int) -> None:
    measured = read_log(logs_url, job)
    assert measured["end"].endswith(END.decode()), "the tail of the log is what is kept"
    assert MAX_LOG_BYTES - 2 * len(CHUNK) <= measured["chars"] <= MAX_LOG_BYTES
    assert measured["growth_kib"] < 64 * 1024, f"peak RSS grew {measured['growth_kib'] / 1024:.0f} MB of {size >> 20}"


def test_an_errors_huge_body_is_not_read(logs_url: str) -> None:
    measured = read_log(logs_url, 9)
    assert measured["error"].startswith("GitHub GET log of job 9 answered 500: 'xxxx")
    assert measured["growth_kib"] < 16 * 1024, f"peak RSS grew {measured['growth_kib'] / 1024:.0f} MB"


def test_a_gzip_bomb_is_inflated_no_further_than_the_cap(logs_url: str) -> None:
    measured = read_log(logs_url, 10, MAX_LOG_READ=16 << 20)
    assert measured["end"].endswith("[ai-fix: the log was read no further, after 16 MiB]\n")
    assert measured["growth_kib"] < 96 * 1024, f"peak RSS grew {measured['growth_kib'] / 1024:.0f} MB"


def test_a_log_trickling_in_is_read_for_the_time_allowed_and_kept_as_far_as_it_came(logs_url: str) -> None:
    measured = read_log(logs_url, 11, LOG_SECONDS=2.0)
    assert measured["end"].endswith("[ai-fix: the log was read no further, after 2 s]\n")
    assert measured["chars"] > len("[ai-fix: the log was read no further, after 2 s]\n"), "what came is kept"
    assert measured["seconds"] < 30, "the 60 s the server would take are not waited for"
