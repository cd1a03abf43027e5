"""Builds the configured Embedder; the only place that maps ``[embedder] provider`` to a class.

Construction is cheap for Ollama (no request until the first embedding) and loads and verifies the
ONNX model for "onnx", so a missing or corrupted model fails at startup with ``ModelError``. Each
adapter is imported only when it is the one configured (the Ollama client brings httpx and
pydantic, which the recall process, tap.wiring.recall_child, does not need).
"""

from __future__ import annotations

from tap.config import EmbedderConfig
from tap.ports import Embedder

__all__ = ["make_embedder"]


def make_embedder(cfg: EmbedderConfig, *, queries_only: bool = False) -> Embedder:
    """The embedder the config names (`queries_only`: for a process that embeds one query at a time,
    the recall process, which then loads less of the ONNX model)."""
    if cfg.provider == "ollama":
        from store.ollama_embedder import OllamaEmbedder

        return OllamaEmbedder(cfg.ollama_url, cfg.ollama_model, batch_size=cfg.batch_size)
    from store.onnx_embedder import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(queries_only=queries_only)
