"""Redaction of encoded secrets: any 12+ character piece of a held secret, in base64 at any alignment, base64url,
base32, hex in either case or JSON `\\u` escapes, never survives."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.redact import MASK, redact, redact_json, safe_outgoing

SECRET_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~"
AROUND = " :,{}«»éü€\n"
"""What the secret is embedded in: no character of a secret, so no byte of it is one of the secret's either."""


@dataclass(frozen=True)
class Encoding:
    name: str
    encode: Callable[[str], str]
    atom: Callable[[str], list[str]]
    """The encoding of each unit of the text (a group of bytes, a byte, a character), in order."""
    block: int
    """Bytes (or, for `\\u`, characters) per unit: a unit mixes a piece with its neighbours only at the edges."""
    leak: int
    """This many characters of the encoding lying wholly inside the piece would give part of it away."""


def _groups(encoded: str, width: int) -> list[str]:
    return [encoded[i : i + width] for i in range(0, len(encoded), width)]


def _escape(text: str) -> list[str]:
    units = text.encode("utf-16-be", "surrogatepass")
    return [f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)]


ENCODINGS = [
    Encoding("plain", lambda t: t, lambda t: list(t), 1, 8),
    Encoding("base64", lambda t: base64.b64encode(t.encode()).decode(), lambda t: _groups(base64.b64encode(t.encode()).decode(), 4), 3, 8),
    Encoding("base64url", lambda t: base64.urlsafe_b64encode(t.encode()).decode().rstrip("="), lambda t: _groups(base64.urlsafe_b64encode(t.encode()).decode(), 4), 3, 8),
    Encoding("base32", lambda t: base64.b32encode(t.encode()).decode(), lambda t: _groups(base64.b32encode(t.encode()).decode(), 8), 5, 8),
    Encoding("hex", lambda t: t.encode().hex(), lambda t: _groups(t.encode().hex(), 2), 1, 8),
    Encoding("HEX", lambda t: t.encode().hex().upper(), lambda t: _groups(t.encode().hex().upper(), 2), 1, 8),
    Encoding("json \\u", lambda t: "".join(_escape(t)), _escape, 1, 12),
    Encoding("JSON \\U", lambda t: "".join(_escape(t)).upper().replace("\\U", "\\u"), lambda t: [e.upper().replace("\\U", "\\u") for e in _escape(t)], 1, 12),
    Encoding("json \\\\u", lambda t: json.dumps("".join(_escape(t)))[1:-1], lambda t: [e.replace("\\", "\\\\") for e in _escape(t)], 1, 14),
]  # fmt: skip


def inner(encoding: Encoding, before: str, piece: str) -> str:
    """The part of the encoding of `before + piece + ...` that only the piece's own bytes make."""
    raw_before, raw_piece = len(before.encode()), len(piece.encode())
    if encoding.name.lower().startswith("json"):  # one unit per character
        raw_before, raw_piece = len(_escape(before)), len(_escape(piece))
    elif encoding.name == "plain":
        raw_before, raw_piece = len(before), len(piece)
    atoms = encoding.atom(before + piece)
    first = -(-raw_before // encoding.block)
    last = (raw_before + raw_piece) // encoding.block
    return "".join(atoms[first:last])


@settings(max_examples=300, deadline=None)
@given(
    secret=st.text(SECRET_CHARS, min_size=12, max_size=64),
    cut=st.data(),
    before=st.text(AROUND, max_size=7),
    after=st.text(AROUND, max_size=7),
    encoding=st.sampled_from(ENCODINGS),
)
def test_no_12_character_piece_of_a_secret_survives_in_any_encoding(
    secret: str, cut: st.DataObject, before: str, after: str, encoding: Encoding
) -> None:
    start = cut.draw(st.integers(0, len(secret) - 12), label="start")
    end = cut.draw(st.integers(start + 12, len(secret)), label="end")
    piece = secret[start:end]
    text = f"value «{encoding.encode(before + piece + after)}» end"
    out = redact(text, [secret, "an-unrelated-held-token-0000"])
    assert MASK in out
    core = inner(encoding, before, piece)
    assert len(core) >= encoding.leak
    leaked = [core[i : i + encoding.leak] for i in range(len(core) - encoding.leak + 1)]
    assert not [w for w in leaked if w in out], f"{encoding.name}: {out!r}"


@pytest.mark.parametrize("prefix", ["", "K", "KK", "KKK", "KKKK"])
def test_base64_at_every_offset_is_masked(prefix: str) -> None:
    secret = "ghp_" + "Zq3x9Lm2Vb7Nc4Rt8Yw1Ps6Hd5Jf0Gk"
    encoded = base64.b64encode((prefix + secret + " rest").encode()).decode()
    out = safe_outgoing(f"Authorization-ish: {encoded}", [secret])
    assert MASK in out and secret not in base64.b64decode(encoded).decode()[: len(prefix)] + out


def test_a_secret_in_json_escapes_and_hex_inside_a_trace_line_is_masked() -> None:
    secret = "s3cr3t-Value-4c1d2e7f90ab"
    line = json.dumps({"output": "".join(f"\\u{ord(c):04X}" for c in secret), "hex": secret.encode().hex()})
    out = redact(line, [secret])
    assert out.count(MASK) == 2 and b"7f90ab".hex() not in out and "\\u0037\\u0066" not in out.lower()


def test_ordinary_text_that_merely_looks_encoded_is_left_alone() -> None:
    secret = "canary-SECRET-3f9a1c77e2b4"
    text = (
        "commit 0689c05c75892730be6359a7e6e2f9f8844f910e; blob ZGVmIHRlc3RfYWRkKCk6 in base64; "
        "MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U base32; \\u0048\\u0069 there"
    )
    assert redact(text, [secret]) == text


def test_json_stays_json_when_a_mask_would_land_inside_a_number() -> None:
    key = "sk-ant-cli-test-key-0000000000"  # eight zeros of it are a piece that a cost's digits repeat
    record = {"cost_usd": 0.00128390000000001, "steps": 3, "note": f"sent with {key}", "ok": True}
    assert MASK in redact(json.dumps(record), [key]) and "0.0012839[REDACTED]" in redact(json.dumps(record), [key])
    out = json.loads(redact_json(record, [key]))
    assert out == {"cost_usd": MASK, "steps": 3, "note": f"sent with {MASK}", "ok": True}
    assert redact_json({"cost_usd": 0.5}, [key]) == json.dumps({"cost_usd": 0.5}), "text redaction was enough"


def test_a_secret_written_backwards_is_masked_whole_and_in_pieces() -> None:
    secret = "ghs_reversedToken0123456789abcdef"
    for text in (f"out: {secret[::-1]}\n", f"part {secret[::-1][4:20]} of it"):
        masked = redact(text, [secret])
        assert secret[::-1][4:12] not in masked and "REDACTED" in masked, masked


def test_the_user_and_password_of_any_url_are_masked_whether_held_or_not() -> None:
    text = "Looking in indexes: https://ci:hunter2-pass@pypi.corp/simple; proxy socks5h://u:p4ss@10.0.0.1:1080"
    assert redact(text) == f"Looking in indexes: https://{MASK}@pypi.corp/simple; proxy socks5h://{MASK}@10.0.0.1:1080"
    kept = "git@github.com:o/r.git, https://pypi.org/simple, mailto:a@b.example, http://host:8080/@scope/pkg"
    assert redact(kept) == kept


def test_a_secret_spread_out_with_separators_is_masked_where_it_stands() -> None:
    secret = "Zq8Lm2Vx7Rt4Wn9Kp3Hs"
    hexed = secret.encode().hex()
    for spread in (
        " ".join(secret),
        ",".join(secret),
        " ".join(hexed[i : i + 4] for i in range(0, len(hexed), 4)),  # xxd's groups
        ":".join(hexed[i : i + 2] for i in range(0, len(hexed), 2)).upper(),
        "\n".join(secret[i : i + 7] for i in range(0, len(secret), 7)),  # lines of 7
    ):
        assert redact(f"before <{spread}> after", [secret]) == f"before <{MASK}> after", spread
    ordinary = "a b c d e f g h, 1:2:3:4:5:6:7:8 - deadbeef cafebabe 00 11 22"
    assert redact(ordinary, [secret]) == ordinary
