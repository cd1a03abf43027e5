"""Decoding JSON that arrived from outside (request bodies, JSONL lines): every failure is a ValueError.

msgspec reports malformed JSON as `msgspec.DecodeError`, a wrong shape as `ValidationError`, but
also raises `RecursionError` for nesting deeper than the interpreter's recursion limit and
`UnicodeDecodeError` for bytes that are not UTF-8. Callers that answer 400 on `ValueError` (the
admin API, `POST /tap/ingest`, import) decode through `decode` so none of these becomes a 500.
"""

from __future__ import annotations

from typing import Any

import msgspec


def decode[T](data: bytes | str, type: type[T] = Any) -> T:  # type: ignore[assignment]
    """msgspec.json.decode, with every way it can fail turned into a ValueError that says why."""
    try:
        return msgspec.json.decode(data, type=type)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc).replace("`", "")) from None
    except msgspec.DecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    except UnicodeDecodeError:
        raise ValueError("invalid JSON: the text is not UTF-8") from None
