"""One exception tree for ai-fix; caught only at the edges (HTTP endpoint, worker, CLI).

Every message says what to do about the problem.
"""


class AiFixError(Exception):
    """Base of every error ai-fix raises on purpose."""


class ConfigError(AiFixError):
    """A setting or a repository config is missing or malformed."""


class StoreUnavailable(AiFixError):
    """The job store cannot be reached; callers must not acknowledge work they could not store."""


class GitHubError(AiFixError):
    """A GitHub API call failed after its retries."""


class SandboxUnavailable(AiFixError):
    """A sandbox backend cannot work on this machine; the message names the fix."""


class PolicyViolation(AiFixError):
    """A change or action was refused by the harness; the message is readable by the model."""


class ModelError(AiFixError):
    """The model provider failed after its retries."""
