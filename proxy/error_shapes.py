"""Every error tap answers is in the route's own shape, and bad input is a 4xx, never a 5xx.

`error_shape` (a middleware, just inside the browser guard) turns what aiohttp and the request body
can throw into the error shape of the route that was asked for — the dialect's for the LLM API paths
(`/v1/…`, `/api/…`: what the client's SDK parses), `{"error": message}` everywhere else:
- aiohttp's own HTTP errors (404 no such route, 405 wrong method, 413 body too large) keep their
  status and headers (`Allow`) and get a JSON body;
- request bodies are taken as sent (the app does not decompress them, proxy.web_app): the LLM API
  paths forward a compressed body with its `Content-Encoding`, tap's own routes (admin API,
  webhooks) refuse one with 415; a body that cannot be read (a broken chunked encoding) is a 400;
- a body that the JSON decoder gives up on in a way that is not a `ValueError` (nesting deeper
  than the decoder's recursion limit) is a 400. Decoders of request bodies should turn these into
  their own 400 first (tap.jsonbody); this is the net under them, logged so it can be fixed.
Responses a handler already made (JSON errors included) pass through untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from proxy.forward import error_response
from tap.intercept.dialects.registry import PASSTHROUGH_PREFIXES, passthrough_dialect

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_KEPT_HEADERS = ("Allow", "Retry-After", "WWW-Authenticate")


def shaped_error(
    request: web.Request, status: int, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    """`status` with `message` in the error shape of the route the request was for."""
    if request.path.startswith(PASSTHROUGH_PREFIXES):
        return error_response(passthrough_dialect(request.path, request.headers), status, message, headers or {})
    return web.Response(
        status=status,
        body=msgspec.json.encode({"error": message}),
        content_type="application/json",
        headers=headers,
    )


def _message(exc: web.HTTPException) -> str:
    text = (exc.text or "").strip()
    if text and not text.startswith(f"{exc.status}:"):
        return text
    return {
        404: "not found: tap serves no such path",
        405: f"method {exc.method if isinstance(exc, web.HTTPMethodNotAllowed) else ''} is not allowed for this path",
        413: "request body too large (see [proxy] max_body_mb)",
    }.get(exc.status, exc.reason)


@web.middleware
async def error_shape(request: web.Request, handler: Handler) -> web.StreamResponse:
    """See the module docstring."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity") and not request.path.startswith(PASSTHROUGH_PREFIXES):
        return shaped_error(request, 415, f"tap's own routes take uncompressed bodies (Content-Encoding: {encoding})")
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or exc.content_type == "application/json":
            raise
        headers = {name: exc.headers[name] for name in _KEPT_HEADERS if name in exc.headers}
        return shaped_error(request, exc.status, _message(exc), headers)
    except (RequestPayloadError, HttpProcessingError) as exc:
        cause = exc.__cause__ or exc
        detail = getattr(cause, "message", "") or str(cause).strip()
        return shaped_error(request, 400, f"the request body could not be read: {detail}")
    except RecursionError:
        log.warning("%s %s: a request body nested too deeply reached a handler", request.method, request.path)
        return shaped_error(request, 400, "invalid JSON: nested too deeply")
    except UnicodeDecodeError:
        log.warning("%s %s: a request body that is not UTF-8 reached a handler", request.method, request.path)
        return shaped_error(request, 400, "invalid JSON: the body is not UTF-8 text")
