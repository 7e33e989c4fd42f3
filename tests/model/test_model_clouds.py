"""Anthropic models on Amazon Bedrock and Google Vertex AI: the anthropic SDK's own clients, opened from the
settings the way a run opens them, against the fake Messages API on loopback (and a fake Google token endpoint)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.commands.toolkit import open_backend
from bot.errors import ConfigError
from bot.model.base import ModelRequest
from bot.model.prices import cost_usd
from bot.model.scripted import ScriptedModel, call, turn
from bot.secrets import held_secrets
from bot.settings import load_settings
from tests.support.clouds import PROJECT, serve_google_tokens, sigv4_valid
from tests.support.model import serve_fake_api

ACCESS_KEY = "AKIAAIFIXTESTKEY0001"
SECRET_KEY = "aifix/test/secret+key/canary-0000000000000"
BEDROCK_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
VERTEX_ID = "claude-haiku-4-5@20251001"
STABLE = "You are a careful engineer. " * 400


def request(model: str) -> ModelRequest:
    tool = {"name": "finish", "description": "end", "input_schema": {"type": "object", "properties": {}}}
    return ModelRequest(
        model=model,
        system=STABLE,
        messages=[{"role": "user", "content": [{"type": "text", "text": "fix the bug"}]}],
        tools=[tool],
        tool_choice={"type": "any"},
    )


@pytest.fixture
def clean_cloud_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No cloud setting of the machine leaks in; AWS looks for files that do not exist and never asks a metadata server."""
    for name in [n for n in os.environ if n.startswith(("AWS_", "AIFIX_", "GOOGLE_", "CLOUD_ML_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    return tmp_path


def test_bedrock_signs_each_request_with_sigv4_and_prices_the_family(
    clean_cloud_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    script = ScriptedModel([turn("", call("finish")), turn("", call("finish"))])
    with serve_fake_api(script) as (fake, url):
        fake.failures = [(529, {"retry-after": "0"})]
        monkeypatch.setenv("AIFIX_BEDROCK_BASE_URL", url)
        model = open_backend("bedrock", load_settings(), spec=f"bedrock:{BEDROCK_ID}", role="main")
        first = model.complete(request(BEDROCK_ID))
        second = model.complete(request(BEDROCK_ID))
    assert fake.paths == [f"/model/{BEDROCK_ID}/invoke"] * 3 and first.retries == 1
    body = json.loads(fake.bodies[1])
    assert body["anthropic_version"] and "model" not in body
    for sent, headers in zip(fake.bodies, fake.headers):
        assert sigv4_valid(
            f"{url}/model/{BEDROCK_ID}/invoke",
            headers,
            sent,
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region="us-east-1",
        )
        assert SECRET_KEY not in json.dumps(headers) + sent
    assert first.tool_calls[0].name == "finish"
    assert second.usage.cache_read_tokens > 1024
    assert second.cost_usd == pytest.approx(cost_usd("claude-haiku-4-5", second.usage))


def test_bedrock_api_key_goes_as_a_bearer_token_and_missing_settings_stop_at_open(
    clean_cloud_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="no AWS region; set AIFIX_AWS_REGION or AWS_REGION"):
        open_backend("bedrock", load_settings(), spec="bedrock:x", role="main")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    with pytest.raises(ConfigError, match="no AWS credentials found.*AWS_BEARER_TOKEN_BEDROCK"):
        open_backend("bedrock", load_settings(), spec="bedrock:x", role="main")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-canary-0000000001")
    with serve_fake_api(ScriptedModel([turn("", call("finish"))])) as (fake, url):
        monkeypatch.setenv("AIFIX_BEDROCK_BASE_URL", url)
        open_backend("bedrock", load_settings(), spec="bedrock:x", role="main").complete(request(BEDROCK_ID))
    assert fake.headers[0]["authorization"] == "Bearer bedrock-api-key-canary-0000000001"
    assert "bedrock-api-key-canary-0000000001" not in fake.bodies[0]


def test_vertex_takes_tokens_from_application_default_credentials(
    clean_cloud_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = ScriptedModel([turn("", call("finish")), turn("", call("finish"))])
    with serve_google_tokens() as tokens, serve_fake_api(script) as (fake, url):
        key_file = tokens.key_file(clean_cloud_env)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
        monkeypatch.setenv("CLOUD_ML_REGION", "us-east5")
        monkeypatch.setenv("AIFIX_VERTEX_BASE_URL", url)
        model = open_backend("vertex", load_settings(), spec=f"vertex:{VERTEX_ID}", role="small")
        assert len(tokens.issued) == 1, "the token is minted when the model is opened"
        first = model.complete(request(VERTEX_ID))
        second = model.complete(request(VERTEX_ID))
    [grant] = tokens.grants
    assert grant["iss"] == f"ai-fix@{PROJECT}.iam.gserviceaccount.com"
    path = f"/projects/{PROJECT}/locations/us-east5/publishers/anthropic/models/{VERTEX_ID}:rawPredict"
    assert fake.paths == [path, path]
    assert {h["authorization"] for h in fake.headers} == {f"Bearer {tokens.issued[0]}"}
    body = json.loads(fake.bodies[0])
    assert body["anthropic_version"] and "model" not in body
    assert first.tool_calls[0].name == "finish" and second.usage.cache_read_tokens > 1024
    assert second.cost_usd == pytest.approx(cost_usd("claude-haiku-4-5", second.usage))
    # The key file's private key is gathered for redaction with the other secrets.
    private_key = json.loads(key_file.read_text())["private_key"]
    assert private_key in held_secrets(load_settings())


def test_vertex_without_region_or_credentials_stops_at_open(
    clean_cloud_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="vertex: no region; set AIFIX_VERTEX_REGION or CLOUD_ML_REGION"):
        open_backend("vertex", load_settings(), spec="vertex:x", role="main")
    monkeypatch.setenv("CLOUD_ML_REGION", "global")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(clean_cloud_env / "missing.json"))
    with pytest.raises(ConfigError, match="no usable Google credentials.*GOOGLE_APPLICATION_CREDENTIALS"):
        open_backend("vertex", load_settings(), spec="vertex:x", role="main")
