"""tap's configuration: `config.toml` decoded into frozen msgspec Structs, one per table.

Rules (docs/architecture.md, Interfaces): every field has a default, so an empty or missing file
is valid; unknown keys are errors (typos fail loudly); limits live in `Meta`; secrets are never
values in the file, only the *names* of environment variables (`*_env` fields).

Where the file and the data dir are found: tap.locations (`config_lookup`: the lookup order, and
why a file was read or passed over, which `tap config check` says). `read_config` is the one
validation of a config file: `tap hook` calls it too (bridges.hooks.lightconfig).
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from tap import locations
from tap.config_errors import URL_PATTERN, config_problems
from tap.errors import ConfigError
from tap.locations import (
    ConfigLookup,
    config_lookup,
    default_data_dir,
    find_config_path,
    read_secret,
    user_cache_dir,
    user_config_file,
)

__all__ = [
    "Config",
    "ConfigLookup",
    "LoadedConfig",
    "config_lookup",
    "default_config_text",
    "default_data_dir",
    "find_config_path",
    "load_config",
    "parse_config",
    "read_config",
    "read_secret",
    "resolve_data_dir",
    "user_cache_dir",
    "user_config_file",
]

Port = Annotated[int, msgspec.Meta(ge=0, le=65535)]
PositiveFloat = Annotated[float, msgspec.Meta(gt=0)]
EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
OptionalEnvName = Annotated[str, msgspec.Meta(pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$")]
Url = Annotated[str, msgspec.Meta(pattern=URL_PATTERN)]  # base URLs of HTTP APIs: the scheme is required


class Section(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Base for config tables: typos fail loudly; values are immutable after load."""


class DataConfig(Section, frozen=True):
    """Where tap keeps its state (store, queue, turn log, admin token), and for how long the
    conversation text it no longer needs (tap.ingest.retention)."""

    dir: str = ""
    retention_days: PositiveFloat = 30.0
    min_free_mb: Annotated[float, msgspec.Meta(ge=0)] = 64.0


class ServerConfig(Section, frozen=True):
    """The one HTTP port for the proxy, the admin API, webhooks and the web page."""

    host: str = "127.0.0.1"
    port: Port = 8787
    allowed_hosts: list[str] = msgspec.field(default_factory=list)
    allowed_origins: list[str] = msgspec.field(default_factory=list)
    header_timeout_s: PositiveFloat = 10.0
    idle_timeout_s: PositiveFloat = 60.0
    max_connections_per_client: Annotated[int, msgspec.Meta(ge=0)] = 256


class UpstreamConfig(Section, frozen=True):
    """Where each API dialect is forwarded, and how long tap waits for it."""

    anthropic: Url = "https://api.anthropic.com"
    openai: Url = "https://api.openai.com"
    ollama: Url = "http://127.0.0.1:11434"
    connect_timeout_s: PositiveFloat = 10.0
    read_timeout_s: PositiveFloat = 600.0


class ProxyConfig(Section, frozen=True):
    """How the proxy picks scopes and whether it injects and captures."""

    inject: bool = True
    capture: bool = True
    scope_by_api_key: bool = False
    max_body_mb: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 64


class RecallConfig(Section, frozen=True):
    """The hot path: how many tokens of memories, how fast, how relevant."""

    budget_tokens: Annotated[int, msgspec.Meta(ge=50, le=8000)] = 500
    deadline_ms: Annotated[int, msgspec.Meta(ge=10, le=10000)] = 150
    candidates: Annotated[int, msgspec.Meta(ge=1, le=500)] = 80
    min_similarity: Annotated[float, msgspec.Meta(ge=-1, le=1)] = 0.2
    recency_half_life_days: Annotated[float, msgspec.Meta(gt=0)] = 180.0
    overload_lexical: bool = True
    wait_goal_ms: Annotated[int, msgspec.Meta(ge=0, le=10000)] = 30
    process: bool = True


class StoreConfig(Section, frozen=True):
    """The memory store: embedded Chroma under the data dir, or a Chroma server by URL."""

    url: Annotated[str, msgspec.Meta(pattern=r"^(https?://[^\s/]+(:\d+)?/?)?$")] = ""
    collection: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$")] = "memories"


class EmbedderConfig(Section, frozen=True):
    """Which model turns text into vectors."""

    provider: Literal["onnx", "ollama"] = "onnx"
    ollama_url: str = "http://127.0.0.1:11434"
    ollama_model: str = "nomic-embed-text"
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 32


class ExtractConfig(Section, frozen=True):
    """The background pipeline: chunking, gate, extractor, retries and the money cap."""

    provider: Literal["rules", "anthropic", "ollama", "openai"] = "rules"
    gate: Literal["heuristic", "anthropic", "ollama", "openai"] = "heuristic"
    reconcile: Literal["rules", "llm"] = "rules"
    gate_model: str = "claude-haiku-4-5"
    model: str = "claude-sonnet-4-6"
    api_key_env: EnvName = "ANTHROPIC_API_KEY"
    anthropic_url: Url = "https://api.anthropic.com"
    ollama_url: str = "http://127.0.0.1:11434"
    ollama_model: str = "llama3.2"
    openai_url: Url = "http://127.0.0.1:8080/v1"
    openai_model: str = ""
    openai_api_key_env: OptionalEnvName = ""
    openai_output: Literal["auto", "json_schema", "tools", "json"] = "auto"
    openai_temperature: Annotated[float, msgspec.Meta(ge=-1, le=2)] = 0.0
    timeout_s: PositiveFloat = 60.0
    chunk_tokens: Annotated[int, msgspec.Meta(ge=50, le=8000)] = 500
    overlap_tokens: Annotated[int, msgspec.Meta(ge=0, le=4000)] = 100
    store_episodes: bool = True
    flush_after_s: Annotated[float, msgspec.Meta(ge=0)] = 60.0
    max_attempts: Annotated[int, msgspec.Meta(ge=1, le=100)] = 6
    backoff_s: Annotated[float, msgspec.Meta(ge=0)] = 2.0
    daily_budget_usd: Annotated[float, msgspec.Meta(ge=0)] = 2.0
    duplicate_similarity: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.9
    supersede_similarity: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.75

    def __post_init__(self) -> None:
        if self.overlap_tokens >= self.chunk_tokens:
            raise ValueError(
                f"overlap_tokens ({self.overlap_tokens}) must be smaller than chunk_tokens ({self.chunk_tokens})"
            )
        if "openai" in (self.provider, self.gate) and not self.openai_model.strip():
            raise ValueError(
                'openai_model must name the model the OpenAI-compatible server serves (e.g. "qwen2.5-7b-instruct") '
                'when provider or gate is "openai"'
            )


class ConsolidateConfig(Section, frozen=True):
    """Living with memory for months (tap.extract.consolidation): near-duplicates merged into one memory
    citing all their sources, stale low-importance memories archived (listed and restorable, never
    recalled), and an optional cap per scope. Offline, no LLM; at low priority in `tap serve`, and
    by hand with `tap memories consolidate`."""

    enabled: bool = True
    interval_hours: PositiveFloat = 24.0
    merge_similarity: Annotated[float, msgspec.Meta(ge=0.5, le=1)] = 0.8
    archive_after_days: Annotated[float, msgspec.Meta(ge=0)] = 90.0
    archive_max_importance: Annotated[int, msgspec.Meta(ge=0, le=5)] = 2
    archive_excerpts: bool = False
    max_per_scope: Annotated[int, msgspec.Meta(ge=0)] = 0


class WhyConfig(Section, frozen=True):
    """The short-lived record of each proxied request's recall (`tap why`), kept in the server's
    memory only: at most `keep` requests, each for at most `keep_minutes`."""

    keep: Annotated[int, msgspec.Meta(ge=0, le=10000)] = 200
    keep_minutes: Annotated[float, msgspec.Meta(gt=0, le=1440)] = 60.0
    candidates: Annotated[int, msgspec.Meta(ge=1, le=500)] = 40


class AdminConfig(Section, frozen=True):
    """The admin API token: read from this env var if set, else the token file in the data dir."""

    token_env: OptionalEnvName = "TAP_ADMIN_TOKEN"


class TelegramConfig(Section, frozen=True):
    """The Telegram bridge (webhook served by `tap serve`)."""

    enabled: bool = False
    token_env: EnvName = "TAP_TELEGRAM_TOKEN"
    secret_env: EnvName = "TAP_TELEGRAM_SECRET"
    path: Annotated[str, msgspec.Meta(pattern=r"^/[A-Za-z0-9/_-]*$")] = "/telegram/webhook"
    api_url: Url = "https://api.telegram.org"
    allowed_users: list[int] = msgspec.field(default_factory=list)
    allow_groups: bool = False
    provider: Literal["anthropic", "ollama"] = "anthropic"
    model: str = "claude-sonnet-4-6"
    api_key_env: EnvName = "ANTHROPIC_API_KEY"
    anthropic_url: Url = "https://api.anthropic.com"
    ollama_url: str = "http://127.0.0.1:11434"
    max_tokens: Annotated[int, msgspec.Meta(ge=1, le=64000)] = 1024
    system_prompt: str = "You are a helpful assistant in a Telegram chat. Be concise."
    history_turns: Annotated[int, msgspec.Meta(ge=0, le=500)] = 20
    reply_timeout_s: PositiveFloat = 90.0
    recall_deadline_ms: Annotated[int, msgspec.Meta(ge=10, le=10000)] = 1000


class LogtailConfig(Section, frozen=True):
    """Chat logs `tap serve` keeps tailing into memory."""

    enabled: bool = False
    paths: list[str] = msgspec.field(default_factory=lambda: ["~/.claude/projects"])
    format: Literal["auto", "claude-code", "jsonl", "text"] = "auto"
    scope: str = ""
    poll_s: PositiveFloat = 1.0


class HooksConfig(Section, frozen=True):
    """Agent hooks (Claude Code, Codex): whose memories, how long a hook may take, the start digest."""

    scope: Annotated[str, msgspec.Meta(max_length=256)] = ""
    timeout_s: PositiveFloat = 1.0
    embedded_timeout_s: PositiveFloat = 10.0
    start_budget_tokens: Annotated[int, msgspec.Meta(ge=0, le=8000)] = 300


class MitmConfig(Section, frozen=True):
    """The mitmproxy way in (docs/ways-in.md): a forward proxy for clients that cannot change their
    base URL, and reverse proxies per upstream; run by `tap serve` when enabled, or by `tap mitm`."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: Port = 8080
    regular: bool = True
    hosts: list[Annotated[str, msgspec.Meta(pattern=r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$")]] = (
        msgspec.field(default_factory=lambda: ["api.anthropic.com", "api.openai.com", "ollama.com"])
    )
    reverse: list[Annotated[str, msgspec.Meta(pattern=r"^https?://[^\s/@]+@\d{1,5}$")]] = msgspec.field(
        default_factory=list
    )
    confdir: str = ""
    upstream_ca: str = ""


class Config(Section, frozen=True):
    """The whole configuration; one field per TOML table."""

    data: DataConfig = msgspec.field(default_factory=DataConfig)
    server: ServerConfig = msgspec.field(default_factory=ServerConfig)
    upstream: UpstreamConfig = msgspec.field(default_factory=UpstreamConfig)
    proxy: ProxyConfig = msgspec.field(default_factory=ProxyConfig)
    recall: RecallConfig = msgspec.field(default_factory=RecallConfig)
    store: StoreConfig = msgspec.field(default_factory=StoreConfig)
    embedder: EmbedderConfig = msgspec.field(default_factory=EmbedderConfig)
    extract: ExtractConfig = msgspec.field(default_factory=ExtractConfig)
    admin: AdminConfig = msgspec.field(default_factory=AdminConfig)
    telegram: TelegramConfig = msgspec.field(default_factory=TelegramConfig)
    logtail: LogtailConfig = msgspec.field(default_factory=LogtailConfig)
    hooks: HooksConfig = msgspec.field(default_factory=HooksConfig)
    mitm: MitmConfig = msgspec.field(default_factory=MitmConfig)
    consolidate: ConsolidateConfig = msgspec.field(default_factory=ConsolidateConfig)
    why: WhyConfig = msgspec.field(default_factory=WhyConfig)


class LoadedConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A config plus where it came from (and why) and the data dir it resolves to."""

    config: Config
    path: Path | None
    data_dir: Path
    reason: str = ""
    passed_over: tuple[str, ...] = ()


def parse_config(text: str, *, origin: str = "config") -> Config:
    """Decode and validate TOML text; the error names every bad key, what it allows and an example."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{origin}: not valid TOML: {exc}") from exc
    try:
        return msgspec.convert(data, Config, strict=True)
    except msgspec.ValidationError as exc:
        problems = config_problems(data, Config) or [str(exc)]
        if len(problems) == 1:
            raise ConfigError(f"{origin}: {problems[0]}") from exc
        listing = "\n".join(f"  {problem}" for problem in problems)
        raise ConfigError(f"{origin}: {len(problems)} problems\n{listing}") from exc


def default_config_text() -> str:
    """The documented default config file that ships with tap (the repository's config.toml)."""
    return (resources.files("tap") / "config.toml").read_text(encoding="utf-8")


def resolve_data_dir(config: Config) -> Path:
    """`$TAP_HOME`, else `[data] dir`, else the user data folder (tap.locations.data_dir)."""
    return locations.data_dir(config.data.dir)


def read_config(path: Path) -> Config:
    """Read and validate one config file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    return parse_config(text, origin=str(path))


def load_config(explicit: str | Path | None = None, *, project_file: bool = True) -> LoadedConfig:
    """Find, read and validate the config, and resolve the data dir. `project_file`: whether
    `./config.toml` is looked at (tap.locations.config_lookup)."""
    lookup = config_lookup(explicit, project_file=project_file)
    config = Config() if lookup.path is None else read_config(lookup.path)
    return LoadedConfig(
        config=config,
        path=lookup.path,
        data_dir=resolve_data_dir(config),
        reason=lookup.reason,
        passed_over=lookup.passed_over,
    )
