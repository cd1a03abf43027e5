"""Builds the configured Embedder; the only place that maps ``[embedder] provider`` to a class.

Construction is cheap for Ollama (no request until the first embedding) and loads and verifies the
ONNX model for "onnx", so a missing or corrupted model fails at startup with ``ModelError``.
"""

from __future__ import annotations

from store.ollama_embedder import OllamaEmbedder
from store.onnx_embedder import OnnxMiniLMEmbedder
from tap.config import EmbedderConfig
from tap.ports import Embedder

__all__ = ["make_embedder"]


def make_embedder(cfg: EmbedderConfig) -> Embedder:
    """The embedder the config names."""
    if cfg.provider == "ollama":
        return OllamaEmbedder(cfg.ollama_url, cfg.ollama_model, batch_size=cfg.batch_size)
    return OnnxMiniLMEmbedder()
