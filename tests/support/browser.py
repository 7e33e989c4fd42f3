"""A real headless browser for page tests: Debian's chromium (installed by scripts/setup.sh) driven by Playwright.

Playwright cannot download its own browser here, so it is pointed at /usr/bin/chromium. Screenshots
are test artifacts, written to `test-artifacts/` at the repository's root (ignored by git).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless chromium per test module (Playwright's sync API owns an event loop while it runs)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run ./scripts/setup.sh (it installs Debian's chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield launched
        launched.close()


def artifact(name: str) -> Path:
    """Where a test saves a file for people to look at after the run."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / name
