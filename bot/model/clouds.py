"""Anthropic models on Amazon Bedrock and Google Vertex AI: the anthropic SDK's own clients behind `AnthropicModel`.

Both speak the Messages API (tools, prompt caching, usage) and fail with the SDK's usual errors, so
the backend, its retries and its accounting are the Anthropic one's; only the client and the advice
for refused calls differ. Credentials come from the clouds' usual chains (AWS: environment keys, a
profile, a role, or a Bedrock API key; Google: Application Default Credentials) and are checked when
the model is opened, so a missing one stops a run before it starts. Each needs its SDK extra
(`pip install 'ai-fix[bedrock]'` or `'ai-fix[vertex]'`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anthropic

from bot.errors import ConfigError
from bot.model.anthropic_backend import AnthropicModel
from bot.model.prices import Price
from bot.model.retry import Api, RetryPolicy

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"


def _api(name: str, credentials: str) -> Api:
    return Api(
        name=name,
        transient=(anthropic.APITimeoutError, anthropic.APIConnectionError),
        status=anthropic.APIStatusError,
        fixes={
            401: f"check the credentials ({credentials})",
            403: f"the credentials lack access to this model in this region; enable it or check {credentials}",
            404: "the model id is unknown in this region; check the spec (Bedrock ids look like us.anthropic.claude-...-v1:0, Vertex ids like claude-...@DATE)",
        },
    )


BEDROCK_API = _api(
    "Bedrock's Messages API", "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or AWS_BEARER_TOKEN_BEDROCK"
)
VERTEX_API = _api("Vertex AI's Messages API", "GOOGLE_APPLICATION_CREDENTIALS or gcloud's application-default login")


def _missing(extra: str, library: str) -> ConfigError:
    return ConfigError(f"{extra}: models need {library}; install ai-fix with pip install 'ai-fix[{extra}]'")


def bedrock_model(
    *,
    region: str | None,
    base_url: str | None,
    api_key: str | None,
    timeout_s: float = 300.0,
    retry: RetryPolicy | None = None,
    prices: Mapping[str, Price] | None = None,
) -> AnthropicModel:
    """Requests signed with SigV4 from boto3's credential chain, or sent with a Bedrock API key (`api_key`)."""
    if not region:
        raise ConfigError("bedrock: no AWS region; set AIFIX_AWS_REGION or AWS_REGION, e.g. us-east-1")
    if api_key is None:
        try:
            import boto3  # type: ignore[import-untyped]
        except ImportError:
            raise _missing("bedrock", "boto3") from None
        if boto3.Session(region_name=region).get_credentials() is None:
            raise ConfigError(
                "bedrock: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
                "or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK"
            )
    client: Any = anthropic.AnthropicBedrock(
        aws_region=region, api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s
    )
    return AnthropicModel(client, retry=retry, api=BEDROCK_API, prices=prices)


def vertex_model(
    *,
    region: str | None,
    project_id: str | None,
    base_url: str | None,
    timeout_s: float = 300.0,
    retry: RetryPolicy | None = None,
    prices: Mapping[str, Price] | None = None,
) -> AnthropicModel:
    """Bearer tokens from Application Default Credentials (a service-account key file, gcloud's login, the metadata server)."""
    if not region:
        raise ConfigError("vertex: no region; set AIFIX_VERTEX_REGION or CLOUD_ML_REGION, e.g. us-east5 or global")
    try:
        import google.auth
        import google.auth.exceptions
        from google.auth.transport.requests import Request
    except ImportError:
        raise _missing("vertex", "google-auth") from None
    try:
        credentials, adc_project = google.auth.default(scopes=[CLOUD_PLATFORM])
        credentials.refresh(Request())  # type: ignore[no-untyped-call]  # a bad key stops here, not mid-run
    except google.auth.exceptions.GoogleAuthError as exc:
        raise ConfigError(
            f"vertex: no usable Google credentials ({exc}); set GOOGLE_APPLICATION_CREDENTIALS to a service-account "
            "key file or run `gcloud auth application-default login`"
        ) from exc
    project = project_id or adc_project
    if not project:
        raise ConfigError("vertex: no Google Cloud project; set AIFIX_VERTEX_PROJECT_ID or ANTHROPIC_VERTEX_PROJECT_ID")
    client: Any = anthropic.AnthropicVertex(
        region=region, project_id=project, credentials=credentials, base_url=base_url, max_retries=0, timeout=timeout_s
    )
    return AnthropicModel(client, retry=retry, api=VERTEX_API, prices=prices)
