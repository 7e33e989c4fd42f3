"""The one settings object, built once at start-up and passed in (never read at import time)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.errors import ConfigError


class Settings(BaseSettings):
    """Every knob of the service. Environment variables use the `AIFIX_` prefix."""

    model_config = SettingsConfigDict(env_prefix="AIFIX_", extra="ignore")

    app_id: int | None = None
    """The GitHub App's numeric id (from its settings page)."""
    private_key: SecretStr | None = None
    """The App's private key as PEM text; or set `private_key_path`."""
    private_key_path: Path | None = None
    """A file holding the App's private key (PEM)."""
    webhook_secret: SecretStr | None = None
    """The secret GitHub signs deliveries with."""
    database_url: str = "sqlite:///ai-fix.db"
    """Where jobs and deliveries live; a SQLite file in the working directory by default."""
    github_api_url: str = "https://api.github.com"
    """GitHub's REST API root; GitHub Enterprise and tests point it elsewhere."""
    admin_token: SecretStr | None = None
    """Bearer token for the read endpoints (/tasks, /metrics); they are disabled when unset."""
    trigger_label: str = "ai-fix"
    """The issue label that starts a job."""
    workers: int = Field(default=2, ge=0, le=64)
    """How many in-process workers `ai-fix serve` runs."""
    anthropic_api_key: SecretStr | None = None
    """Key for the Anthropic Messages API (the model backend)."""
    anthropic_base_url: str | None = None
    """Override of the Messages API root (tests, proxies)."""
    model: str = "claude-sonnet-5-5"
    """Default model for the execution loop; `.github/ai-fix.yml` `model.name` overrides it."""
    small_model: str = "claude-haiku-4-5"
    """Cheap model for small mechanical tasks and history compression."""
    sandbox: str = "auto"
    """Sandbox backend: auto | podman | docker | bwrap | none."""
    sandbox_ro_paths: list[Path] = Field(default_factory=list)
    """Host toolchain folders mounted read-only in the sandbox (a Python outside /usr); JSON list in the environment."""
    sandbox_env: dict[str, str] = Field(default_factory=dict)
    """Variables every sandboxed command gets (a package index mirror, a proxy); JSON object in the environment."""
    sandbox_pull: Literal["missing", "always", "never"] | None = None
    """Overrides every repository's `sandbox.pull` (e.g. `never` on an offline host)."""
    sandbox_snapshots: int = Field(default=3, ge=0, le=100)
    """Setup snapshots kept per repository (container backends); older ones are removed. 0 keeps none."""
    work_dir: Path = Path("ai-fix-work")
    """Where job workspaces and traces are kept on the host."""
    pipeline: str = "bot.commands.toolkit:delivery_pipeline"
    """What a job runs after its snapshot: "module:factory", the factory takes the settings and returns a Pipeline."""

    @model_validator(mode="after")
    def _key_sources(self) -> Settings:
        if self.private_key is not None and self.private_key_path is not None:
            raise ValueError("set AIFIX_PRIVATE_KEY or AIFIX_PRIVATE_KEY_PATH, not both")
        return self

    def app_private_key(self) -> str:
        """The PEM text of the App's key, from the variable or the file."""
        if self.private_key is not None:
            return self.private_key.get_secret_value()
        if self.private_key_path is not None:
            try:
                return self.private_key_path.read_text()
            except OSError as exc:
                raise ConfigError(
                    f"AIFIX_PRIVATE_KEY_PATH: cannot read {self.private_key_path} ({exc.strerror}); "
                    "point it at the .pem file downloaded from the App's settings page"
                ) from exc
        raise ConfigError(
            "AIFIX_PRIVATE_KEY is not set: set it to the App's PEM key or set AIFIX_PRIVATE_KEY_PATH to the .pem file"
        )

    def secret_values(self) -> list[str]:
        """Every secret this process holds, for redaction of outgoing text."""
        values = [
            s.get_secret_value()
            for s in (self.webhook_secret, self.admin_token, self.anthropic_api_key, self.private_key)
            if s
        ]
        if self.private_key is None and self.private_key_path is not None and self.private_key_path.is_file():
            values.append(self.private_key_path.read_text())
        return [v for v in values if v]


_FIXES = {
    "app_id": "set AIFIX_APP_ID to the numeric App ID shown on the GitHub App's settings page",
    "private_key": "set AIFIX_PRIVATE_KEY to the App's PEM key or AIFIX_PRIVATE_KEY_PATH to the .pem file",
    "webhook_secret": "set AIFIX_WEBHOOK_SECRET to the webhook secret entered when registering the App",
}


def load_settings(**overrides: object) -> Settings:
    """Build the settings from the environment; a malformed value raises one ConfigError line naming it."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        err = exc.errors()[0]
        name = "AIFIX_" + str(err["loc"][0]).upper() if err["loc"] else "AIFIX_*"
        raise ConfigError(f"{name}: {err['msg']}; fix the variable and start again") from exc


def require_server_settings(settings: Settings) -> None:
    """Check what `ai-fix serve` and `ai-fix worker` cannot start without."""
    if settings.app_id is None:
        raise ConfigError(f"AIFIX_APP_ID is not set: {_FIXES['app_id']}")
    if settings.webhook_secret is None or not settings.webhook_secret.get_secret_value():
        raise ConfigError(f"AIFIX_WEBHOOK_SECRET is not set: {_FIXES['webhook_secret']}")
    pem = settings.app_private_key()
    if "PRIVATE KEY" not in pem:
        raise ConfigError(f"AIFIX_PRIVATE_KEY does not look like a PEM key: {_FIXES['private_key']}")
