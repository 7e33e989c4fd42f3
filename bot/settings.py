"""The one settings object, built once at start-up and passed in (never read at import time)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, AliasChoices, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.errors import ConfigError

PRICE_KEYS = frozenset({"input", "output", "cache_write", "cache_read"})


def _absolute(value: Path) -> Path:
    # Absolute once, at start: git commands run with other working directories (`git worktree add` in eval).
    return value.expanduser().absolute()


def _priced(value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    for model, price in value.items():
        unknown = set(price) - PRICE_KEYS
        if unknown or not {"input", "output"} <= set(price) or any(v < 0 for v in price.values()):
            raise ValueError(
                f"{model}: give input and output (and optionally cache_write, cache_read) in USD per million "
                'tokens, none negative, e.g. {"input": 1.0, "output": 2.0}'
            )
    return value


def _service_address(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    if not value.startswith(("https://", "http://")):
        raise ValueError("must be the service's address starting with https:// (e.g. https://ai-fix.example.com)")
    return value.strip().rstrip("/")


MIN_SECRET_CHARS = 16
"""The shortest webhook secret, admin token or link key accepted: shorter ones can be guessed or are placeholders."""
PLACEHOLDERS = frozenset(
    {"changeme", "change", "replaceme", "secret", "password", "token", "example", "placeholder", "todo", "xxx", "test"}
)
"""Words a template or a tutorial puts where a secret goes (compared without case, spaces, `-` or `_`)."""
_PLACEHOLDER = re.compile(r"(?i)change[-_ ]?me|replace[-_ ]?me|^<.*>$|^\$\{.*\}$|^your[-_ ]")
"""`change-me` anywhere, `<your secret>`, `${SECRET}`, `your-webhook-secret`: left from an example, not chosen."""


def weak_secret(value: str) -> str:
    """Why `value` is not acceptable as a secret this service checks requests with ("" when it is): a known
    placeholder, or fewer than MIN_SECRET_CHARS characters."""
    hint = "make one with `openssl rand -hex 32`"
    folded = re.sub(r"[-_\s]", "", value).lower()
    if folded in PLACEHOLDERS or _PLACEHOLDER.search(value.strip()):
        return f"is a placeholder, not a secret; {hint}"
    if len(value) < MIN_SECRET_CHARS:
        return f"must be at least {MIN_SECRET_CHARS} characters; {hint}"
    if len(set(value)) < 4:
        return f"repeats too few characters to be a secret; {hint}"
    return ""


def _signing_key(value: SecretStr | None) -> SecretStr | None:
    if value is not None and (why := weak_secret(value.get_secret_value())):
        raise ValueError(why)
    return value


# Each field's own rule travels with its type, so the settings class lists the knobs and only the rule
# that spans two fields (_key_sources) stays in it.
AbsolutePath = Annotated[Path, AfterValidator(_absolute)]
ModelPrices = Annotated[dict[str, dict[str, float]], AfterValidator(_priced)]
ServiceAddress = Annotated[str | None, AfterValidator(_service_address)]
SigningKey = Annotated[SecretStr | None, AfterValidator(_signing_key)]


class Settings(BaseSettings):
    """Every knob of the service. Environment variables use the `AIFIX_` prefix; the model SDKs' own
    variables (`ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`, ...) stand in for unset `AIFIX_` ones. An empty
    variable counts as unset."""

    model_config = SettingsConfigDict(env_prefix="AIFIX_", extra="ignore", env_ignore_empty=True, populate_by_name=True)

    app_id: int | None = None
    """The GitHub App's numeric id (from its settings page)."""
    private_key: SecretStr | None = None
    """The App's private key as PEM text; or set `private_key_path`."""
    private_key_path: Path | None = None
    """A file holding the App's private key (PEM)."""
    webhook_secret: SecretStr | None = None
    """The secret GitHub signs deliveries with."""
    client_id: str | None = None
    """The App's OAuth client id (the setup page writes it with the rest; ai-fix itself signs in as the App)."""
    client_secret: SecretStr | None = None
    """The App's OAuth client secret: kept with the App's settings and redacted like every secret."""
    env_file: Path | None = None
    """The settings file read besides the environment (the environment wins); the setup page writes the App's
    credentials to it. Unset: `.env` beside the SQLite database (in the working directory with PostgreSQL)."""
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
    max_running_per_repo: int | None = Field(default=1, ge=1)
    """Work jobs running at once in one repository, across every worker; more wait in the queue (None: no limit)."""
    max_running_per_installation: int | None = Field(default=None, ge=1)
    """… in one installation of the App (unset: no limit)."""
    daily_cost_usd: float | None = Field(default=None, gt=0)
    """What one installation's jobs may spend per UTC day; a job that would start beyond it waits for the next day."""
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY")
    )
    """Key for the Anthropic Messages API (models named `claude-...` or `anthropic:...`)."""
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL")
    )
    """Override of the Messages API root (tests, proxies)."""
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    """Key for an OpenAI-compatible Chat Completions API (models named `openai:...`)."""
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    """Root of that API (any compatible server or gateway); OpenAI's own when unset."""
    ollama_base_url: str = "http://127.0.0.1:11434/v1"
    """The Ollama server's OpenAI-compatible root (models named `ollama:...`; no key)."""
    vllm_base_url: str = "http://127.0.0.1:8000/v1"
    """The vLLM server's OpenAI-compatible root (models named `vllm:...`; no key)."""
    aws_region: str | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_AWS_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")
    )
    """Bedrock's region (models named `bedrock:...`; credentials come from boto3's usual chain)."""
    aws_bearer_token_bedrock: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_AWS_BEARER_TOKEN_BEDROCK", "AWS_BEARER_TOKEN_BEDROCK")
    )
    """A Bedrock API key, instead of signing with AWS credentials."""
    bedrock_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_BEDROCK_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL")
    )
    """Override of Bedrock's runtime endpoint (a VPC endpoint, tests)."""
    vertex_region: str | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_VERTEX_REGION", "CLOUD_ML_REGION")
    )
    """Vertex AI's region (models named `vertex:...`; credentials are Application Default Credentials)."""
    vertex_project_id: str | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_VERTEX_PROJECT_ID", "ANTHROPIC_VERTEX_PROJECT_ID")
    )
    """The Google Cloud project; the credentials' own project when unset."""
    vertex_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("AIFIX_VERTEX_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL")
    )
    """Override of Vertex AI's endpoint (Private Service Connect, tests)."""
    model: str = "claude-sonnet-5-5"
    """Default model for the execution loop; `.github/ai-fix.yml` `model.name` overrides it."""
    small_model: str | None = None
    """Cheap model for small mechanical tasks and history compression; unset: `claude-haiku-4-5` when the model
    is Anthropic's, else the model itself (one vendor's key is enough)."""
    model_prices: ModelPrices = Field(default_factory=dict)
    """Prices of models the shipped table lacks (self-hosted, brand new): JSON such as
    `{"openai:my-model": {"input": 1.0, "output": 2.0}}`, USD per million tokens (`cache_write` and
    `cache_read` may be given too; else the input rate). A model with no price runs with its cost unknown."""
    sandbox: str = "auto"
    """Sandbox backend: auto | podman | docker | bwrap | none."""
    sandbox_image: str = Field(default="python:3.12-slim", min_length=1)
    """The container backends' image for a repository whose `.github/ai-fix.yml` names none (`sandbox.image`)."""
    sandbox_ro_paths: list[Path] = Field(default_factory=list)
    """Host toolchain folders mounted read-only in the sandbox (a Python outside /usr); JSON list in the environment."""
    sandbox_env: dict[str, str] = Field(default_factory=dict)
    """Variables every sandboxed command gets (a package index mirror, a proxy); JSON object in the environment."""
    sandbox_pull: Literal["missing", "always", "never"] | None = None
    """Overrides every repository's `sandbox.pull` (e.g. `never` on an offline host)."""
    sandbox_snapshots: int = Field(default=3, ge=0, le=100)
    """Setup snapshots kept per repository (container backends); older ones are removed. 0 keeps none."""
    header_timeout: float = Field(default=10.0, gt=0, le=300)
    """Seconds a connection to `ai-fix serve` has to send a request's headers (from when it opens, or from its next
    request's first byte); then it is closed."""
    body_timeout: float = Field(default=10.0, gt=0, le=600)
    """Seconds it then has to send the body (GitHub itself gives up on a delivery after 10 s)."""
    body_budget_mb: int = Field(default=40, ge=34, le=65536)
    """MiB of request bodies the intake holds at once, across every connection; a body beyond it is answered 503.
    At least 34: GitHub's largest payload (25 MiB) beside the 8 MiB kept for ordinary deliveries."""
    max_connections: int = Field(default=1000, ge=1, le=1_000_000)
    """Connections `ai-fix serve` keeps open at once; more are answered 503 and closed (keep it below `ulimit -n`)."""
    work_dir: AbsolutePath = Path("ai-fix-work")
    """Where job workspaces and traces are kept on the host."""
    pipeline: str = "bot.commands.toolkit:delivery_pipeline"
    """What a job runs after its snapshot: "module:factory", the factory takes the settings and returns a Pipeline."""
    eval_cache: Path = Path("~/.cache/ai-fix/sdists")
    """Where `ai-fix eval` keeps the source releases it downloads for tasks built from PyPI (checked by sha256)."""
    eval_index_url: str = "https://pypi.org/simple"
    """The package index (PEP 691 simple API) `ai-fix eval` downloads those releases from."""
    public_url: ServiceAddress = None
    """Where people reach this service (https://ai-fix.example.com); run-viewer links are built from it."""
    viewer_secret: SigningKey = None
    """Key that signs run-viewer links (HMAC over the job id and the expiry); no links are made when unset."""
    viewer_link_days: int = Field(default=30, ge=1, le=3650)
    """How long a signed run-viewer link stays valid."""

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


def secret_values(settings: Settings) -> list[str]:
    """Every secret the settings hold (the key file's text too), for redaction of outgoing text."""
    values = [v.get_secret_value() for v in settings.__dict__.values() if isinstance(v, SecretStr)]
    if settings.private_key is None and settings.private_key_path is not None and settings.private_key_path.is_file():
        values.append(settings.private_key_path.read_text())
    return [v for v in values if v]


SQLITE_PREFIX = "sqlite:///"


def settings_file(settings: Settings) -> Path:
    """Where the settings file is: AIFIX_ENV_FILE, else `.env` beside the SQLite database (the working directory's
    with PostgreSQL)."""
    if settings.env_file is not None:
        return settings.env_file
    database = settings.database_url.partition("?")[0]
    if database.startswith(SQLITE_PREFIX):
        return Path(database.removeprefix(SQLITE_PREFIX)).parent / ".env"
    return Path(".env")


def app_configured(settings: Settings) -> bool:
    """Whether any of the App's credentials is set; none is what `ai-fix serve`'s setup page is for."""
    return settings.app_id is not None or settings.private_key is not None or settings.private_key_path is not None


VARIABLE_PREFIXES = ("AIFIX_", "ANTHROPIC_", "OPENAI_", "AWS_", "CLOUD_ML_")
"""An error's location that is already a variable's name (an alias) is not prefixed again."""

_FIXES = {
    "app_id": "set AIFIX_APP_ID to the numeric App ID shown on the GitHub App's settings page",
    "private_key": "set AIFIX_PRIVATE_KEY to the App's PEM key or AIFIX_PRIVATE_KEY_PATH to the .pem file",
    "webhook_secret": "set AIFIX_WEBHOOK_SECRET to the webhook secret entered when registering the App",
}


def load_settings(**overrides: object) -> Settings:
    """Build the settings from the environment and the settings file (`settings_file()`, when there is
    one; the environment wins); a malformed value raises one ConfigError line naming it."""
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
        path = settings_file(settings)
        if not path.is_file():
            return settings
        return Settings(_env_file=path, **overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]).upper() if err["loc"] else "*"
        name = field if field.startswith(VARIABLE_PREFIXES) else "AIFIX_" + field
        raise ConfigError(f"{name}: {err['msg']}; fix the variable and start again") from exc
    except OSError as exc:  # the file is there but cannot be read (its mode, a directory)
        raise ConfigError(
            f"cannot read the settings file {path} ({exc.strerror}); fix its permissions or point AIFIX_ENV_FILE elsewhere"
        ) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"the settings file {path} is not UTF-8 text; point AIFIX_ENV_FILE at a NAME=value file"
        ) from exc


def require_server_settings(settings: Settings) -> None:
    """Check what `ai-fix serve` and `ai-fix worker` cannot start without."""
    if settings.app_id is None:
        raise ConfigError(f"AIFIX_APP_ID is not set: {_FIXES['app_id']}")
    if settings.webhook_secret is None or not settings.webhook_secret.get_secret_value():
        raise ConfigError(f"AIFIX_WEBHOOK_SECRET is not set: {_FIXES['webhook_secret']}")
    # Anyone who guesses these can queue jobs (a signed delivery) or read every job (the admin endpoints).
    for name, held, where in (
        ("AIFIX_WEBHOOK_SECRET", settings.webhook_secret, "enter the same value as the App's webhook secret on GitHub"),
        ("AIFIX_ADMIN_TOKEN", settings.admin_token, "send it as `Authorization: Bearer …`"),
    ):
        if held is not None and (why := weak_secret(held.get_secret_value())):
            raise ConfigError(f"{name} {why}, and {where}")
    pem = settings.app_private_key()
    if "PRIVATE KEY" not in pem:
        raise ConfigError(f"AIFIX_PRIVATE_KEY does not look like a PEM key: {_FIXES['private_key']}")
