from tests.support.service import fake_github, start_service  # noqa: F401  (shared fixtures)
