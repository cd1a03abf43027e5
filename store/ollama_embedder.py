"""The local-server embedder: an Ollama embedding model (default ``nomic-embed-text``) over the SDK.

nomic-embed-text is trained with task prefixes, so queries are sent as ``search_query: …`` and
stored texts as ``search_document: …``; other models get the same prefixes (harmless for most).

Invariants:
- Every vector returned is unit length (Ollama's are usually normalised already; this makes sure).
- ``dimensions`` is learned from the first response (or one probe call when read before any
  embedding); after that, a response of another width raises ``EmbedderError`` rather than mixing
  vectors of two models.
- Every failure of the server or the transport (down, timeout, HTTP error, model not pulled,
  malformed body) surfaces as ``EmbedderError`` naming the URL and model, never as an
  httpx/pydantic exception.
- Thread-safe as far as httpx's Client is; the one piece of state (``dimensions``) is set under a
  lock.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Final

import httpx
import ollama

from store.embedders import ollama_model_id
from tap.errors import EmbedderError

__all__ = ["DEFAULT_MODEL", "DOCUMENT_PREFIX", "QUERY_PREFIX", "OllamaEmbedder"]

DEFAULT_MODEL: Final = "nomic-embed-text"
QUERY_PREFIX: Final = "search_query: "
DOCUMENT_PREFIX: Final = "search_document: "
_PROBE_TEXT: Final = "dimension probe"


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0:
        return [float(x) for x in vector]
    return [float(x) / norm for x in vector]


class OllamaEmbedder:
    """Embeddings from an Ollama server; ``model_id`` is ``ollama:<model>``."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:11434",
        model: str = DEFAULT_MODEL,
        *,
        batch_size: int = 32,
        timeout_s: float = 60.0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_id: str = ollama_model_id(model)
        self._url = url
        self._model = model
        self._batch_size = batch_size
        self._client = ollama.Client(host=url, timeout=timeout_s)
        self._dimensions: int | None = None
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        """The vector width, from the first response (one probe call if nothing was embedded yet)."""
        if self._dimensions is None:
            self._embed([QUERY_PREFIX + _PROBE_TEXT])
        assert self._dimensions is not None  # set by _embed or it raised
        return self._dimensions

    @dimensions.setter
    def dimensions(self, value: int) -> None:
        """Pin a width known in advance (e.g. from the store); responses of another width then fail."""
        with self._lock:
            self._dimensions = value

    def embed_query(self, text: str) -> list[float]:
        """The vector for one query, sent with the ``search_query: `` prefix."""
        return self._embed([QUERY_PREFIX + text])[0]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for several queries in one request (the recall batch), in order."""
        return self._embed([QUERY_PREFIX + text for text in texts]) if texts else []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for texts, in order, sent with the ``search_document: `` prefix in batches."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            vectors.extend(self._embed([DOCUMENT_PREFIX + text for text in batch]))
        return vectors

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()  # type: ignore[no-untyped-call]  # the SDK leaves close() unannotated

    def _embed(self, inputs: list[str]) -> list[list[float]]:
        raw = self._request(inputs)
        if len(raw) != len(inputs):
            raise self._error(f"returned {len(raw)} vectors for {len(inputs)} texts")
        vectors = [_normalise(vector) for vector in raw]
        self._check_width(vectors)
        return vectors

    def _request(self, inputs: list[str]) -> Sequence[Sequence[float]]:
        try:
            return self._client.embed(model=self._model, input=inputs).embeddings
        except ollama.ResponseError as exc:
            hint = f" (run: ollama pull {self._model})" if exc.status_code == 404 else ""
            raise self._error(f"answered HTTP {exc.status_code}: {exc.error}{hint}") from exc
        except ConnectionError as exc:  # what the SDK raises for httpx.ConnectError
            raise self._error("is not reachable (is `ollama serve` running?)") from exc
        except httpx.HTTPError as exc:  # timeouts, dropped connections, protocol errors
            raise self._error(f"failed: {type(exc).__name__}: {exc}") from exc
        except ValueError as exc:  # a body that is not JSON or lacks "embeddings" (pydantic)
            raise self._error(f"sent a malformed response: {exc}") from exc

    def _check_width(self, vectors: list[list[float]]) -> None:
        widths = {len(vector) for vector in vectors}
        with self._lock:
            if self._dimensions is None and len(widths) == 1:
                self._dimensions = widths.pop()
            expected = self._dimensions
        if expected is None:
            raise self._error(f"returned vectors of mixed widths {sorted(widths)}")
        if widths - {expected}:
            raise self._error(f"returned vectors of width {sorted(widths)}, expected {expected}")

    def _error(self, what: str) -> EmbedderError:
        return EmbedderError(f"Ollama at {self._url} (model {self._model}) {what}")
