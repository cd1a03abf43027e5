"""Builds the configured Embedder; the only place that maps ``[embedder] provider`` to a class.

Construction is cheap for Ollama (no request until the first embedding) and loads and verifies the
ONNX model for "onnx", so a missing or corrupted model fails at startup with ``ModelError``. Each
adapter is imported only when it is the one configured (the Ollama client brings httpx and
pydantic, which the recall process, tap.wiring.recall_child, does not need).
"""

from __future__ import annotations

from tap.config import EmbedderConfig
from tap.ports import Embedder

__all__ = ["ONNX_MODEL_ID", "embedder_id", "make_embedder", "ollama_model_id"]

ONNX_MODEL_ID = "all-MiniLM-L6-v2-q8"
"""The embedded model's id (store.onnx_embedder), kept here so it is known without loading it."""


def ollama_model_id(model: str) -> str:
    """The id of an Ollama embedding model (store.ollama_embedder)."""
    return f"ollama:{model}"


def embedder_id(cfg: EmbedderConfig) -> str:
    """The `model_id` of the embedder the config names, without building it (what a store records)."""
    return ollama_model_id(cfg.ollama_model) if cfg.provider == "ollama" else ONNX_MODEL_ID


def make_embedder(cfg: EmbedderConfig, *, queries_only: bool = False) -> Embedder:
    """The embedder the config names (`queries_only`: for a process that embeds one query at a time,
    the recall process, which then loads less of the ONNX model)."""
    if cfg.provider == "ollama":
        from store.ollama_embedder import OllamaEmbedder

        return OllamaEmbedder(cfg.ollama_url, cfg.ollama_model, batch_size=cfg.batch_size)
    from store.onnx_embedder import OnnxMiniLMEmbedder

    return OnnxMiniLMEmbedder(queries_only=queries_only)
