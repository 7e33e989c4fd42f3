"""AIFIX_SANDBOX_ENV reaches every check, so what it holds that is secret (a proxy's or an index's password,
a token) is redacted like the service's own secrets: `ai-fix run` (the real Anthropic client on the fake
Messages API, bwrap) on the sample repository, whose check prints its whole environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.runs import DEMO_SCRIPT, config, run_local, sample_files

pytestmark = pytest.mark.bwrap

PASSWORD = "idx-pass-7Qz9w2Lr"
TOKEN = "npm-tok-Vb3Kq8Zt1Wx"
ENV = {
    "PIP_INDEX_URL": f"https://ci-reader:{PASSWORD}@pypi.corp.example/simple",
    "HTTPS_PROXY": "http://proxy.corp.example:3128",
    "YARN_NPM_AUTH_TOKEN": TOKEN,  # sorted last: a `KEY=` mask in a JSON trace line runs to the next space
}


def test_secrets_in_the_sandbox_environment_reach_the_checks_but_no_text(tmp_path: Path) -> None:
    check = "env | sort && python3 -m unittest discover -s tests -t . -v"
    files = sample_files(**{".github/ai-fix.yml": config(check)})
    run = run_local(tmp_path, DEMO_SCRIPT, files=files, settings={"sandbox_env": ENV})
    assert run.result.outcome == "accepted", run.result.reason
    trace = (run.out / "trace.jsonl").read_text()
    # The checks had the values (their output was recorded), and every copy of it lost the secret parts only.
    assert "https://[REDACTED]@pypi.corp.example/simple" in trace and "proxy.corp.example:3128" in trace
    for text in (trace, (run.out / "pr.md").read_text(), run.log, *run.fake.bodies):
        assert PASSWORD not in text and TOKEN not in text and "ci-reader:" not in text
