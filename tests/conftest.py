"""Fixtures shared across test folders, registered once: the live service and fake GitHub, real sandboxes, the shop
repository, a headless browser, a local image registry."""

pytest_plugins = [
    "tests.support.postgres",
    "tests.support.service",
    "tests.support.sandbox_fixtures",
    "tests.support.shop",
    "tests.support.browser",
    "tests.support.registry",
]
