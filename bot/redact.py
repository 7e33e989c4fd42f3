"""Redaction of secrets from any text that leaves the process (PR bodies, comments, traces, model context).

Pure functions: the caller passes the secret values it holds.
"""

from __future__ import annotations

import base64
import functools
import re
import urllib.parse
from collections.abc import Iterable
from fnmatch import fnmatch

from bot.errors import AiFixError

MASK = "[REDACTED]"
MIN_FRAGMENT = 8
"""A secret is also removed when any run of this many of its characters appears."""

# Token shapes worth removing even when this process never held the value.
TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bgh[pousr]_[A-Za-z0-9_\-\.]{20,}"),  # GitHub tokens, incl. the long ghs_APPID_JWT form
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),  # Anthropic keys
    re.compile(r"\bsk-[A-Za-z0-9]{32,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),  # Slack
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),  # JWTs
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"),
    re.compile(r"(?i)\b(authorization:\s*(?:bearer|token|basic)\s+)[^\s\"']+"),
)

SECRET_FILE_GLOBS: tuple[str, ...] = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", "*.p12", "*.pfx")
"""Files whose contents never enter the model's context or the trace."""

_KEY_ASSIGNMENT = re.compile(
    r"(?i)\b([A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|APIKEY|PRIVATE_KEY|ACCESS_KEY)[A-Z0-9_]*\s*[=:]\s*)"
    r"([\"']?)([^\s\"']{8,})\2"
)


class RedactionError(AiFixError):
    """Redaction could not be completed; the caller must post nothing (fail closed)."""


def is_secret_file(path: str) -> bool:
    """True for files that hold secrets by convention (.env*, *.pem, private keys)."""
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch(name, glob) for glob in SECRET_FILE_GLOBS)


@functools.lru_cache(maxsize=1024)
def _variants(secret: str) -> frozenset[str]:
    """The secret and the encodings it commonly travels in (computed once per secret: texts are redacted often)."""
    raw = secret.encode()
    out = {
        secret,
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
    }
    # Multi-line secrets (PEM keys) are also matched line by line.
    out.update(line.strip() for line in secret.splitlines() if len(line.strip()) >= MIN_FRAGMENT)
    return frozenset(v for v in out if v)


def _fragments(value: str) -> Iterable[str]:
    if len(value) < MIN_FRAGMENT:
        yield value
        return
    for i in range(len(value) - MIN_FRAGMENT + 1):
        yield value[i : i + MIN_FRAGMENT]


def redact(text: str, secrets: Iterable[str] = (), *, key_values: bool = True, fragments: bool = True) -> str:
    """Remove every held secret (whole, as an 8+ character substring, base64 or URL-encoded) and known token shapes.

    `fragments=False` skips the 8-character pieces, the costly part (a PEM key alone makes ~1,700 of
    them): only for a second pass over text already redacted in full, such as a trace.
    """
    if not isinstance(text, str):
        raise RedactionError("redaction needs text; refusing to post a non-text value")
    values = sorted({v for s in secrets if s and len(s) >= 4 for v in _variants(s)}, key=len, reverse=True)
    for value in values:
        text = text.replace(value, MASK)
    if values and fragments:
        pieces = {f for v in values for f in _fragments(v)}
        if pieces:
            pattern = re.compile("|".join(re.escape(f) for f in sorted(pieces, key=len, reverse=True)))
            # Extend each hit over the rest of the secret's characters so no tail survives.
            text = _mask_runs(text, pattern)
    for token in TOKEN_PATTERNS:
        text = token.sub(lambda m: (m.group(1) if m.lastindex else "") + MASK, text)
    if key_values:
        text = _KEY_ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}{m.group(2)}", text)
    return text


def _mask_runs(text: str, pattern: re.Pattern[str]) -> str:
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        m = pattern.search(text, pos)
        if m is None:
            break
        start, end = m.span()
        # Overlapping fragments: keep extending while the next window still matches.
        while True:
            nxt = pattern.match(text, end - MIN_FRAGMENT + 1)
            if nxt is None or nxt.end() <= end:
                break
            end = nxt.end()
        spans.append((start, end))
        pos = end
    for start, end in reversed(spans):
        text = text[:start] + MASK + text[end:]
    return text


def contains_secret(text: str, secrets: Iterable[str]) -> bool:
    """True when any held secret (or an 8+ character piece of it) appears in text."""
    return redact(text, secrets, key_values=False) != text or any(s and s in text for s in secrets)


def safe_outgoing(text: str, secrets: Iterable[str]) -> str:
    """Redact every held secret; raise RedactionError (post nothing) if that fails or anything survives."""
    try:
        held = [s for s in secrets if s]
        clean = redact(text, held)
        leaked = contains_secret(clean, held)
    except RedactionError:
        raise
    except Exception as exc:  # any failure inside redaction must stop the post, never let raw text out
        raise RedactionError(f"redaction failed ({type(exc).__name__}); nothing was posted") from exc
    if leaked:
        raise RedactionError("a secret survived redaction; nothing was posted")
    return clean
