"""When to retry a GitHub call: 5xx and network errors with exponential backoff, rate limits as GitHub asks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from githubkit.exception import GitHubException, RateLimitExceeded, RequestError, RequestFailed
from githubkit.retry import RetryOption


@dataclass(frozen=True)
class RetryPolicy:
    """A githubkit `auto_retry` decision function.

    Rate limits honour `retry-after` and `x-ratelimit-reset` (githubkit reads both into
    `retry_after`); without either header GitHub asks for at least a minute. A wait longer than
    `max_wait` is not slept through: the call fails so the job can be retried later instead.
    """

    server_retries: int = 3
    rate_limit_retries: int = 2
    backoff: float = 1.0
    """First 5xx backoff in seconds; doubles on each retry."""
    max_wait: float = 300.0

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        if isinstance(exc, RateLimitExceeded):
            return self._wait(exc.retry_after.total_seconds(), retry_count < self.rate_limit_retries)
        if isinstance(exc, RequestFailed):
            status = exc.response.status_code
            if status in (403, 429) and "rate limit" in exc.response.raw_response.text.lower():
                return self._wait(60.0, retry_count < self.rate_limit_retries)
            if status >= 500:
                return self._backoff(retry_count)
            return RetryOption(False)
        if isinstance(exc, RequestError):
            return self._backoff(retry_count)
        return RetryOption(False)

    def _backoff(self, retry_count: int) -> RetryOption:
        if retry_count >= self.server_retries:
            return RetryOption(False)
        return RetryOption(True, timedelta(seconds=self.backoff * 2**retry_count))

    def _wait(self, seconds: float, allowed: bool) -> RetryOption:
        if not allowed or seconds > self.max_wait:
            return RetryOption(False)
        # Never 0: githubkit treats a falsy wait as "sleep 60 s".
        return RetryOption(True, timedelta(seconds=max(seconds, 0.001)))
