"""Redaction of secrets from any text that leaves the process (PR bodies, comments, traces, model context).

Pure functions: the caller passes the secret values it holds.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable
from fnmatch import fnmatch
from typing import Any

from ahocorasick_rs import AhoCorasick

from bot.errors import AiFixError

MASK = "[REDACTED]"
MIN_FRAGMENT = 8
"""A secret is also removed when any run of this many of its characters appears."""
ENCODED_PIECE = 12
"""... and when any piece of this many of its characters appears encoded (base64, base32, hex, `\\u` escapes)."""

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

TOKEN_STARTS = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "AKIA", "xox", "eyJ", "-----BEGIN")
"""What every token shape begins with (besides `authorization:`): text with none of these skips the patterns."""
KEY_WORDS = ("secret", "token", "passw", "api_key", "apikey", "private_key", "access_key")
"""What a `KEY=value` assignment's name holds, in lower case: text with none of these skips the pattern."""
_KEY_ASSIGNMENT = re.compile(
    # The key word first, not the name's start: the engine then skips ahead to where one begins, instead of
    # backtracking through every word. The rest of the name before it is kept as it is either way.
    r"(?i)((?:SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|APIKEY|PRIVATE_KEY|ACCESS_KEY)[A-Z0-9_]*\s*[=:]\s*)"
    r"([\"']?)([^\s\"']{8,})\2"
)


_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/@:\"'<>]*:[^\s/@\"'<>]+(?=@)")
"""The `user:password` of a URL (`https://user:password@host`), held or not: a proxy's or an index's credentials."""


class RedactionError(AiFixError):
    """Redaction could not be completed; the caller must post nothing (fail closed)."""


def is_secret_file(path: str) -> bool:
    """True for files that hold secrets by convention (.env*, *.pem, private keys)."""
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch(name, glob) for glob in SECRET_FILE_GLOBS)


def _encodings(secret: str) -> set[str]:
    """The whole secret, as it is and in the forms it commonly travels in."""
    raw = secret.encode()
    return {
        secret,
        secret[::-1],  # written backwards (`rev`), to slip past a plain match
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
    }


@functools.lru_cache(maxsize=1024)
def _variants(secret: str) -> frozenset[str]:
    """The secret and the encodings it commonly travels in (computed once per secret: texts are redacted often)."""
    out = _encodings(secret)
    # Multi-line secrets (PEM keys) are also matched line by line.
    out.update(line.strip() for line in secret.splitlines() if len(line.strip()) >= MIN_FRAGMENT)
    return frozenset(v for v in out if v)


def _fragments(value: str) -> Iterable[str]:
    if len(value) < MIN_FRAGMENT:
        yield value
        return
    for i in range(len(value) - MIN_FRAGMENT + 1):
        yield value[i : i + MIN_FRAGMENT]


def _aligned(encode: Callable[[bytes], bytes], raw: bytes, block: int, width: int, groups: int) -> set[str]:
    """Every run of `groups` whole output groups that `encode` gives for the secret's bytes, whatever the offset
    of the secret in the encoded stream (`block` input bytes make `width` characters): only the groups at the
    edges mix with unknown neighbours, so the whole groups inside are those of `raw[k:]` for one k below `block`."""
    out: set[str] = set()
    for text in _cores(encode, raw, block):
        out.update(text[i : i + width * groups] for i in range(0, len(text) - width * groups + 1, width))
    return out


def _cores(encode: Callable[[bytes], bytes], raw: bytes, block: int) -> list[str]:
    """For each k below `block`, the encoding of `raw[k:]` cut to whole blocks: wherever the secret's bytes begin
    in an encoded stream, one of these appears in it whole."""
    return [encode(raw[k:][: (len(raw) - k) // block * block]).decode() for k in range(block)]


def _encoded_pieces(secret: str) -> tuple[set[str], set[str]]:
    """Windows of the secret's encodings that any `ENCODED_PIECE`-character piece of it contains:
    (matched as they are: base64 and base64url; matched in any case: base32 and hex)."""
    raw = secret.encode()
    piece = min(ENCODED_PIECE, len(raw))
    exact: set[str] = set()
    if (groups := min(3, (piece - 2) // 3)) >= 2:
        exact = _aligned(base64.b64encode, raw, 3, 4, groups) | _aligned(base64.urlsafe_b64encode, raw, 3, 4, groups)
    folded = _aligned(base64.b32encode, raw, 5, 8, 1) if piece >= ENCODED_PIECE else set()
    hexed = raw.hex()
    folded.update(hexed[i : i + 2 * piece] for i in range(0, len(hexed) - 2 * piece + 1, 2))
    return exact, {f.lower() for f in folded}


@functools.lru_cache(maxsize=256)
def secret_forms(secret: str) -> frozenset[str]:
    """How data holding the whole secret shows it, to tell whether a file gives it away (masking also takes pieces):
    as it is, backwards, URL-encoded, in base64 or base64url wherever it begins in the encoded stream (`user:token`
    encoded whole), and in hex or base32 (in lower or upper case, as encoders write them)."""
    raw = secret.encode()
    cased = {raw.hex(), *_cores(base64.b32encode, raw, 5)}
    return frozenset(
        f
        for f in _encodings(secret).union(
            *(_cores(e, raw, 3) for e in (base64.b64encode, base64.urlsafe_b64encode)),
            {c.lower() for c in cased},
            {c.upper() for c in cased},
        )
        if f
    )


_KEPT = re.compile(r"[^\s,:;-]")
_ESCAPES = re.compile(rf"(?:\\{{1,2}}u[0-9a-fA-F]{{4}}){{{MIN_FRAGMENT},}}")
"""A run of JSON `\\u` escapes (also escaped once more, as a JSON trace line holds them) long enough to hide a piece."""
_ESCAPE = re.compile(r"\\{1,2}u([0-9a-fA-F]{4})")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
"""Folds case without changing the text's length (`str.lower` may: "İ" becomes two characters)."""


@functools.lru_cache(maxsize=256)
def _automata(secret: str) -> tuple[AhoCorasick, AhoCorasick | None]:
    """Automata over every piece of the secret that gives it away (built once per secret, a few ms for a token,
    about 100 ms for a PEM key): 8-character pieces of it and of its whole encodings, matched as they are with
    the windows of its base64 and base64url encodings; and, matched in any case, the windows of its base32 and hex
    encodings. (`\\u` escapes are decoded where they are found and matched with the first.)"""
    exact = {f for v in _variants(secret) for f in _fragments(v)}
    folded: set[str] = set()
    if len(secret) >= MIN_FRAGMENT:
        windows, folded = _encoded_pieces(secret)
        exact |= windows
    return AhoCorasick(sorted(exact)), (AhoCorasick(sorted(folded)) if folded else None)


def redact(text: str, secrets: Iterable[str] = (), *, key_values: bool = True, fragments: bool = True) -> str:
    """Remove every held secret (whole, as an 8+ character substring, URL-encoded, and any 12+ character piece of
    it in base64 at any alignment, base64url, base32, hex or JSON `\\u` escapes; the pieces also when written with
    separators between their characters, `s e c r e t`, `7365 6372`, `s,e,c`) and known token shapes.

    `fragments=False` skips the pieces, the costly part (a PEM key alone makes thousands of them):
    only for a second pass over text already redacted in full, such as a trace.
    """
    if not isinstance(text, str):
        raise RedactionError("redaction needs text; refusing to post a non-text value")
    held = tuple(sorted({s for s in secrets if s and len(s) >= 4}))
    values = sorted({v for s in held for v in _variants(s)}, key=len, reverse=True)
    for value in values:
        text = text.replace(value, MASK)
    if held and fragments:
        text = _mask_runs(text, [_automata(s) for s in held])
        text = _mask_spread(text, held)
    folded = text.translate(_ASCII_LOWER)
    # Substring tests are far cheaper than the patterns, and most text holds no token and no assignment.
    if any(start in text for start in TOKEN_STARTS) or "authorization" in folded:
        for token in TOKEN_PATTERNS:
            text = token.sub(lambda m: (m.group(1) if m.lastindex else "") + MASK, text)
    if "@" in text and "://" in text:
        text = _USERINFO.sub(lambda m: m.group(1) + MASK, text)
    if key_values and any(word in folded for word in KEY_WORDS):
        text = _KEY_ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}{m.group(2)}", text)
    return text


def redact_json(value: Any, secrets: Iterable[str] = (), **dump: Any) -> str:
    """`json.dumps(value, **dump)` redacted, and still JSON: when a mask lands inside a number or across the text's
    structure (a piece of a held secret that a cost's digits happen to repeat), each value is redacted on its own
    instead and a number that gives a piece away becomes the mask, a string."""
    held = list(secrets)
    dumped = json.dumps(value, **dump)
    text = redact(dumped, held)
    if text == dumped:  # nothing masked: still the JSON it was
        return text
    try:
        json.loads(text)
        return text
    except ValueError:
        return json.dumps(_redact_values(value, held), **dump)


def _redact_values(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, dict):
        return {redact(str(k), secrets): _redact_values(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_values(v, secrets) for v in value]
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value if redact(json.dumps(value), secrets) == json.dumps(value) else MASK
    return value


def _mask_runs(text: str, automata: list[tuple[AhoCorasick, AhoCorasick | None]]) -> str:
    """Every stretch of overlapping or touching pieces becomes one mask, so no tail of a secret survives."""
    folded_text = text.translate(_ASCII_LOWER)
    found: list[tuple[int, int]] = []
    for exact, folded in automata:
        found += [(start, end) for _, start, end in exact.find_matches_as_indexes(text, overlapping=True)]
        if folded is not None:
            found += [(start, end) for _, start, end in folded.find_matches_as_indexes(folded_text, overlapping=True)]
    for run in _ESCAPES.finditer(text):
        escapes = list(_ESCAPE.finditer(text, run.start(), run.end()))
        # One character per escape (a surrogate half, never part of an ASCII secret, stands as U+FFFD).
        chars = "".join("\ufffd" if 0xD800 <= (c := int(e.group(1), 16)) < 0xE000 else chr(c) for e in escapes)
        for exact, _ in automata:
            found += [
                (escapes[start].start(), escapes[end - 1].end())
                for _, start, end in exact.find_matches_as_indexes(chars, overlapping=True)
            ]
    return _masked(text, found)


def _masked(text: str, found: list[tuple[int, int]]) -> str:
    """`text` with every span in `found` masked, overlapping or touching spans as one."""
    spans: list[list[int]] = []
    for start, end in sorted(found):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(end, spans[-1][1])
        else:
            spans.append([start, end])
    kept, pos = [], 0
    for start, end in spans:
        kept += [text[pos:start], MASK]
        pos = end
    return "".join([*kept, text[pos:]])


SEPARATOR_CHARS = ",:;-" + "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
"""What is put between a secret's characters to spread it out (`s e c r e t`, xxd's `7365 6372`, `s,e,c`):
whitespace (every character `str.isspace` names; none lies beyond U+3000) and `,:;-`."""
_SPREAD = str.maketrans("", "", SEPARATOR_CHARS)
_KEPT = re.compile(f"[^{re.escape(SEPARATOR_CHARS)}]")


def spread_out(text: str) -> str:
    """`text` without SEPARATOR_CHARS: a secret spread out with them reads whole again (as it is, or in hex)."""
    return text.translate(_SPREAD)


@functools.lru_cache(maxsize=64)
def _spread_automata(held: tuple[str, ...]) -> tuple[AhoCorasick | None, AhoCorasick | None]:
    """For text without separators, over every held secret at once: the 8-character pieces of each without its
    own separators (matched as they are), and the hex and base32 windows of each (matched in any case)."""
    exact = {f for s in held if len(bare := spread_out(s)) >= MIN_FRAGMENT for f in _fragments(bare)}
    folded = {f for s in held if len(s) >= MIN_FRAGMENT for f in _encoded_pieces(s)[1]}
    return (AhoCorasick(sorted(exact)) if exact else None, AhoCorasick(sorted(folded)) if folded else None)


def _mask_spread(text: str, held: tuple[str, ...]) -> str:
    """Pieces of a held secret spread out with separators, found in the text without them and masked where they
    stand, separators and all."""
    bare = spread_out(text)
    if len(bare) == len(text):
        return text  # no separator: the first pass saw the text as it is
    exact, folded = _spread_automata(held)
    found: list[tuple[int, int]] = []
    if exact is not None:
        found += [(a, b) for _, a, b in exact.find_matches_as_indexes(bare, overlapping=True)]
    if folded is not None:
        found += [(a, b) for _, a, b in folded.find_matches_as_indexes(bare.translate(_ASCII_LOWER), overlapping=True)]
    if not found:
        return text
    where = [m.start() for m in _KEPT.finditer(text)]  # the text's index of each character of `bare`
    return _masked(text, [(where[a], where[b - 1] + 1) for a, b in found])


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
