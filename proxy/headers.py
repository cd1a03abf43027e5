"""Which headers cross the proxy (pure).

Requests: everything the client sent goes upstream as sent (auth headers of both anthropic SDK
generations, `anthropic-version`, `anthropic-beta`, `openai-organization`, …) except hop-by-hop
headers (RFC 9110 §7.6.1 plus the ones `Connection` names), `Host` and `Content-Length` (set for
the body actually sent), tap's own `x-tap-*` control headers, and `Accept-Encoding`, which becomes
`identity` so tap can tee the plain bytes (client and tap talk over loopback).
Responses: everything but hop-by-hop headers and `Content-Length` (set by the server).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from multidict import CIMultiDict

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
_REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "accept-encoding"}
_RESPONSE_DROP = HOP_BY_HOP | {"content-length"}


def _connection_tokens(headers: Mapping[str, str]) -> set[str]:
    value = headers.get("connection", "") or headers.get("Connection", "")
    return {token.strip().lower() for token in value.split(",") if token.strip()}


def _filtered(items: Iterable[tuple[str, str]], drop: frozenset[str], extra: set[str]) -> CIMultiDict[str]:
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in items:
        lower = name.lower()
        if lower in drop or lower in extra or lower.startswith("x-tap-"):
            continue
        out.add(name, value)
    return out


def upstream_request_headers(headers: CIMultiDict[str]) -> CIMultiDict[str]:
    """Headers to send upstream for a client request."""
    out = _filtered(headers.items(), _REQUEST_DROP, _connection_tokens(headers))
    out["Accept-Encoding"] = "identity"
    return out


def client_response_headers(headers: CIMultiDict[str]) -> CIMultiDict[str]:
    """Headers to send back to the client for an upstream response."""
    return _filtered(headers.items(), _RESPONSE_DROP, _connection_tokens(headers))
