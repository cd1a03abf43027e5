"""tap's exception tree. Adapters translate third-party errors into it with ``raise … from``.

TapError
 ├── ConfigError          bad config file, key, value or env var (message names the key)
 ├── ModelError           embedded model missing or corrupted (names the package to reinstall)
 ├── StoreError           memory store unreachable, locked, or opened with another embedder
 │    └── OutOfSpace      the data dir's disk is full (nothing more can be written until space is freed)
 ├── EmbedderError        embedder failed (Ollama down, bad response)
 ├── RecallOverloaded     a recall was shed to keep the others within their deadline (also a TimeoutError)
 ├── UpstreamError        an LLM API upstream failed (proxy side)
 └── ProviderError        a gate/extractor provider failed; ``retryable`` says whether to retry
"""

from __future__ import annotations


class TapError(Exception):
    """Base of every error tap raises on purpose."""


class ConfigError(TapError):
    """The configuration is invalid; the message names the key, the value and why."""


class ModelError(TapError):
    """The embedded model cannot be loaded."""


class StoreError(TapError):
    """The memory store cannot serve the request."""


class OutOfSpace(StoreError):
    """The data dir's file system has no room left for a write (tap.runtime.diskspace)."""


class EmbedderError(TapError):
    """The embedder cannot turn text into vectors."""


class RecallOverloaded(TapError, TimeoutError):
    """Recall was shed: too many were waiting for it to finish before its deadline."""


class UpstreamError(TapError):
    """An LLM API upstream failed."""


class ProviderError(TapError):
    """A gate or extractor provider failed."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable
