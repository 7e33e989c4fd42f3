from support_sandbox.fixtures import kind, sandbox  # noqa: F401
