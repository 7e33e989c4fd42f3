"""What the cloud clients need besides the fake Messages API: a Google OAuth token endpoint, a service-account
key file pointing at it, and a check of AWS Signature Version 4 as Bedrock would make it."""

from __future__ import annotations

import json
import secrets
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jwt
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support.server import serve

PROJECT = "ai-fix-test-project"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
"""What a service account's grant is addressed to, wherever its token_uri points."""


class FakeGoogleTokens:
    """Google's OAuth 2.0 token endpoint for service accounts: a JWT grant signed by the account's key → a token."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.issued: list[str] = []
        self.grants: list[dict[str, object]] = []
        """The verified claims of each grant."""
        self.url = ""
        self.app = Starlette(routes=[Route("/token", self.token, methods=["POST"])])

    async def token(self, request: Request) -> JSONResponse:
        form = urllib.parse.parse_qs((await request.body()).decode())
        public = self.key.public_key()
        try:
            claims = jwt.decode(form["assertion"][0], public, algorithms=["RS256"], audience=GOOGLE_TOKEN_AUDIENCE)
        except (KeyError, jwt.InvalidTokenError) as exc:
            return JSONResponse({"error": "invalid_grant", "error_description": str(exc)}, status_code=400)
        self.grants.append(claims)
        token = f"ya29.{secrets.token_urlsafe(24)}"
        self.issued.append(token)
        return JSONResponse({"access_token": token, "expires_in": 3600, "token_type": "Bearer"})

    def key_file(self, folder: Path) -> Path:
        """A service-account key file (what GOOGLE_APPLICATION_CREDENTIALS names) whose token_uri is this fake."""
        pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        info = {
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": "0123456789abcdef0123456789abcdef01234567",
            "private_key": pem,
            "client_email": f"ai-fix@{PROJECT}.iam.gserviceaccount.com",
            "client_id": "100000000000000000001",
            "token_uri": f"{self.url}/token",
        }
        path = folder / "service-account.json"
        path.write_text(json.dumps(info))
        return path


@contextmanager
def serve_google_tokens() -> Iterator[FakeGoogleTokens]:
    fake = FakeGoogleTokens()
    with serve(fake.app) as url:
        fake.url = url
        yield fake


def sigv4_valid(url: str, headers: dict[str, str], body: str, *, access_key: str, secret_key: str, region: str) -> bool:
    """Recompute the request's SigV4 signature (service `bedrock`) from the headers it signed, as AWS would."""
    auth = headers["authorization"]
    fields = dict(part.strip().split("=", 1) for part in auth.removeprefix("AWS4-HMAC-SHA256 ").split(","))
    signed = fields["SignedHeaders"].split(";")
    request = AWSRequest(method="POST", url=url, headers={h: headers[h] for h in signed}, data=body.encode())
    request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(Credentials(access_key, secret_key), "bedrock", region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    scope = fields["Credential"].split("/")
    return (
        scope[0] == access_key and scope[2:] == [region, "bedrock", "aws4_request"] and fields["Signature"] == expected
    )
