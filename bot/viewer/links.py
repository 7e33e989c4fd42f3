"""Who may open a run's page: a signed link that expires (HMAC over the database's id, the job id and the expiry), or
the admin token. The database's id (`Store.identity`) makes a link open only the job it was made for: another
database (a new file, a restore of another) numbers its jobs from 1 again."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Literal

Verdict = Literal["ok", "wrong", "expired", "disabled"]


def sign(secret: str, store: str, job_id: int, expires: int) -> str:
    """The signature of a link to job `job_id` of the database `store` valid until `expires` (Unix time)."""
    message = f"ai-fix run {job_id} of {store} until {expires}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def run_url(public_url: str, secret: str, store: str, job_id: int, *, expires: int) -> str:
    """The link put in the check run, the pull request and the issue comment."""
    return f"{public_url.rstrip('/')}/runs/{job_id}?exp={expires}&sig={sign(secret, store, job_id, expires)}"


def check_link(secret: str, store: str, job_id: int, exp: str, sig: str, now: float) -> Verdict:
    """Whether `exp` and `sig` (from the link's query) open job `job_id` of the database `store` at time `now`."""
    if not secret:
        return "disabled"
    if not exp.isdigit() or len(exp) > 12:
        return "wrong"
    if not hmac.compare_digest(sign(secret, store, job_id, int(exp)).encode(), sig.encode("utf-8", "replace")):
        return "wrong"
    return "expired" if int(exp) < now else "ok"


def admin_ok(authorization: str, token: str) -> bool:
    """`Authorization: Bearer TOKEN`, or Basic with TOKEN as the password (what a browser's login prompt sends)."""
    if not token:
        return False
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), token.encode())
