import hashlib
import hmac

import pytest

from bot.intake.signature import InvalidSignature, sign, verify_signature

# GitHub's documented test vector (docs: "Validating webhook deliveries", "Testing the webhook payload validation").
VECTOR_SECRET = "It's a Secret to Everybody"
VECTOR_PAYLOAD = b"Hello, World!"
VECTOR_HEADER = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_githubs_documented_vector_signs_and_verifies():
    assert sign(VECTOR_PAYLOAD, VECTOR_SECRET) == VECTOR_HEADER
    verify_signature(VECTOR_PAYLOAD, VECTOR_HEADER, VECTOR_SECRET)


@pytest.mark.parametrize(
    ("body", "header", "secret"),
    [
        (VECTOR_PAYLOAD, None, VECTOR_SECRET),  # missing
        (VECTOR_PAYLOAD, "", VECTOR_SECRET),
        (VECTOR_PAYLOAD, VECTOR_HEADER, "another secret"),  # wrong secret
        (b"Hello, World!\n", VECTOR_HEADER, VECTOR_SECRET),  # body changed by one byte
        (VECTOR_PAYLOAD, VECTOR_HEADER[len("sha256=") :], VECTOR_SECRET),  # no prefix
        (VECTOR_PAYLOAD, VECTOR_HEADER.upper(), VECTOR_SECRET),
        (
            VECTOR_PAYLOAD,
            "sha1=" + hmac.new(VECTOR_SECRET.encode(), VECTOR_PAYLOAD, hashlib.sha1).hexdigest(),
            VECTOR_SECRET,
        ),
        (VECTOR_PAYLOAD, VECTOR_HEADER, ""),  # no secret configured: nothing verifies
    ],
)
def test_anything_but_the_right_sha256_signature_is_refused(body, header, secret):
    with pytest.raises(InvalidSignature):
        verify_signature(body, header, secret)


def test_the_raw_bytes_are_signed_not_reserialised_json():
    body = b'{"a":  1,\n "b": "\xc3\xa9"}'
    header = sign(body, "s")
    verify_signature(body, header, "s")
    with pytest.raises(InvalidSignature):
        verify_signature(b'{"a": 1, "b": "\xc3\xa9"}', header, "s")
