"""Signed links to a run's page, and the admin token as a browser or a script sends it."""

from __future__ import annotations

import base64

from bot.viewer.links import admin_ok, check_link, run_url, sign

KEY = "viewer-key-for-tests-0123456789"
STORE = "9f0c3e1d2b4a59687766554433221100"
"""A job store's id (`Store.identity`)."""


def test_a_signed_link_opens_its_own_job_of_its_own_job_store_until_it_expires() -> None:
    url = run_url("https://ai-fix.example.com/", KEY, STORE, 42, expires=2_000_000_000)
    assert url == f"https://ai-fix.example.com/runs/42?exp=2000000000&sig={sign(KEY, STORE, 42, 2_000_000_000)}"
    sig = sign(KEY, STORE, 42, 2_000_000_000)
    assert check_link(KEY, STORE, 42, "2000000000", sig, now=1_999_999_999) == "ok"
    assert check_link(KEY, STORE, 42, "2000000000", sig, now=2_000_000_001) == "expired"
    assert check_link(KEY, STORE, 43, "2000000000", sig, now=0) == "wrong", "another job"
    assert check_link(KEY, "0" * 32, 42, "2000000000", sig, now=0) == "wrong", "job 42 of another job store"
    assert check_link(KEY, STORE, 42, "2000000001", sig, now=0) == "wrong", "a later expiry"
    assert check_link("another-key-0123456789", STORE, 42, "2000000000", sig, now=0) == "wrong"
    for exp, given in (("", sig), ("-5", sig), ("1e9", sig), ("2000000000", ""), ("2000000000", "é" * 64)):
        assert check_link(KEY, STORE, 42, exp, given, now=0) == "wrong"
    assert check_link("", STORE, 42, "2000000000", sig, now=0) == "disabled"


def test_the_admin_token_as_bearer_or_as_a_basic_password() -> None:
    token = "admin-token-0123456789"
    basic = base64.b64encode(f"anyone:{token}".encode()).decode()
    assert admin_ok(f"Bearer {token}", token) and admin_ok(f"basic {basic}", token)
    assert not admin_ok(f"Bearer {token}x", token) and not admin_ok(f"Token {token}", token)
    assert not admin_ok("Basic not-base64!", token) and not admin_ok(f"Bearer {token}", "")
    assert not admin_ok("Basic " + base64.b64encode(token.encode()).decode(), token), "the token is the password"
