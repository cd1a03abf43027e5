"""TapAddon: the mitmproxy addon that gives API requests memories and taps their replies.

The policy lives in the interception core (tap.intercept.core, reached through `CoreLink`); this module
only adapts mitmproxy's event hooks to it, the way proxy/routes.py adapts aiohttp:
- `tls_clienthello`: a connection to a host the `HostPolicy` does not name is ignored — mitmproxy
  relays its bytes without terminating TLS, so the client sees the real server's certificate;
- `requestheaders`: a POST to a memory route (tap.intercept.dialects.registry.MEMORY_ROUTES: Anthropic
  Messages, OpenAI Chat Completions and Responses, Ollama chat/generate) or a token-counting route
  (COUNT_ROUTES) on an intercepted host is kept for `request`; every other flow is streamed both
  ways without buffering and without changes;
- `request` (the whole body is there): `Interceptor.before` — scope, conversation, recall under the
  deadline, injection — and the body is replaced when a block was injected; tap's `x-tap-*`
  control headers never go upstream, and `Accept-Encoding: identity` lets the tee read the reply;
  a malformed `x-tap-scope` is answered locally with 400 in the dialect's error shape; any failure
  of the core forwards the request unchanged with `x-tap-degraded: intercept-error` (memory never
  breaks a request);
- `responseheaders`: tap's headers (`x-tap-recalled`, `x-tap-recall-ms`, `x-tap-degraded`) are
  added, and the body is streamed through `flow.response.stream`, a callable that feeds a copy of
  each chunk to the dialect's tee (tap.intercept.dialects.tee.ReplyTee) and returns the chunk unchanged — no
  chunk is held back; the reply is settled before the chunk that completes it is sent on;
- `response` / `error`: `Interceptor.after` captures the exchange (in the core's background); an
  upstream failure (refused, TLS verification) or a client that went away is one log line naming
  the flow, and the flow ends as mitmproxy ends it (a 502 when nothing was sent yet; nothing else
  is affected); `tls_failed_client`: a client that refused tap's certificate is one line with what
  to do (mitmproxy's own handshake lines are dropped, bridges.mitm.runner).
Invariant: every flow that reaches `request` is finished exactly once (`response` or `error`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from mitmproxy import http, tls

from bridges.mitm.hosts import HostPolicy
from bridges.mitm.link import CoreLink
from tap.intercept.core import DEGRADED_HEADER, BadRequest, Before
from tap.intercept.dialects import Dialect, Reply, count_dialect, memory_dialect
from tap.intercept.dialects.tee import ReplyTee
from tap.runtime.priority import HOT_PATH
from tap.runtime.repeatlog import RepeatLog

log = logging.getLogger("tap.mitm")
_KEY = "tap"


@dataclass
class FlowState:
    """What the addon keeps on one intercepted flow (`flow.metadata["tap"]`)."""

    dialect: Dialect
    counting: bool
    before: Before | None = None
    tee: ReplyTee | None = None


def route_of(flow: http.HTTPFlow) -> tuple[Dialect, bool] | None:
    """(dialect, is a token-counting route) for a POST to one of tap's routes, else None."""
    if flow.request.method != "POST":
        return None
    path = flow.request.path.split("?", 1)[0]
    dialect = memory_dialect(path)
    if dialect is not None:
        return dialect, False
    counted = count_dialect(path)
    return (counted, True) if counted is not None else None


def declared_length(response: http.Response) -> int | None:
    """The body length the upstream declared (None when chunked or unknown)."""
    length = response.headers.get("content-length", "")
    if not length.isdigit() or "chunked" in response.headers.get("transfer-encoding", "").lower():
        return None
    return int(length)


def tee_stream(tee: ReplyTee) -> Callable[[bytes], bytes]:
    """A `Message.stream` callable: a copy of each chunk to the tee, the chunk itself unchanged."""

    def stream(chunk: bytes) -> bytes:
        tee.feed(chunk)
        return chunk

    return stream


def client_went_away(message: str) -> bool:
    """Whether a flow error says the client left (mitmproxy: "Client disconnected.", h2 resets)."""
    lowered = message.lower()
    return "client" in lowered or "peer closed" in lowered


class TapAddon:
    """The mitmproxy addon (see the module docstring)."""

    def __init__(self, core: CoreLink, policy: HostPolicy) -> None:
        self.core = core
        self.policy = policy
        self.flows = 0
        self.failures = RepeatLog(log)

    # -- connections ---------------------------------------------------------------------------

    def tls_clienthello(self, data: tls.ClientHelloData) -> None:
        """Never terminate TLS for a host tap does not intercept."""
        address = data.context.server.address
        host = data.client_hello.sni or (address[0] if address else "")
        port = address[1] if address else None
        if not self.policy.intercepts(host, port):
            data.ignore_connection = True

    def tls_failed_client(self, data: tls.TlsData) -> None:
        """The client refused tap's certificate (or left during the handshake): one line saying why."""
        error = data.conn.error or "handshake failed"
        if error == "connection closed early":  # a client that probed and left: not a failure
            return
        host = data.conn.sni or (data.context.server.address[0] if data.context.server.address else "?")
        log.warning(
            "mitm: TLS with a client for %s failed: %s — if the client does not trust tap's CA, "
            "`tap mitm ca` shows how to (or use reverse mode)",
            host,
            error,
        )

    def _intercepted(self, flow: http.HTTPFlow) -> bool:
        return self.policy.intercepts(flow.request.host, flow.request.port)

    # -- requests ------------------------------------------------------------------------------

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        """Keep tap's routes for `request`; stream everything else unchanged."""
        route = route_of(flow) if self._intercepted(flow) else None
        if route is None:
            flow.request.stream = True
            return
        flow.metadata[_KEY] = FlowState(*route)

    async def request(self, flow: http.HTTPFlow) -> None:
        """The before-step: recall and inject (see the module docstring)."""
        state = flow.metadata.get(_KEY)
        if not isinstance(state, FlowState) or flow.response is not None:
            return
        self.flows += 1
        request = flow.request
        body = request.get_content(strict=False) or b""
        HOT_PATH.enter()  # until _finish (or the local 400): background writers pause meanwhile (tap.runtime.priority)
        try:
            state.before = await self.core.before(state.dialect, request.headers, body, request.path)
        except BadRequest as exc:
            HOT_PATH.leave()
            del flow.metadata[_KEY]
            content, kind = state.dialect.error_body(400, str(exc))
            flow.response = http.Response.make(400, content, {"content-type": kind})
            return
        except Exception as exc:  # memory never breaks a request
            self.failures.failed("intercept", "mitm: the interception core failed; forwarding unchanged", exc=exc)
            state.before = Before(None, {DEGRADED_HEADER: "intercept-error"})
        except BaseException:
            HOT_PATH.leave()
            raise
        if state.before.body is not None:
            request.content = state.before.body
        for name in [n for n in request.headers if n.lower().startswith("x-tap-")]:
            del request.headers[name]
        if state.before.context is not None and not state.counting:
            request.headers["accept-encoding"] = "identity"

    # -- responses -----------------------------------------------------------------------------

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """tap's headers, and the body streamed through the tee."""
        response = flow.response
        assert response is not None
        state = flow.metadata.get(_KEY)
        if not isinstance(state, FlowState) or state.before is None:
            response.stream = True
            return
        for name, value in state.before.headers.items():
            response.headers[name] = value
        ctx = state.before.context
        if ctx is None or state.counting or response.status_code >= 400:
            response.stream = True
            return
        content_type = response.headers.get("content-type", "")
        state.tee = ReplyTee(state.dialect, content_type, declared_length(response), lambda r: self.core.settle(ctx, r))
        response.stream = tee_stream(state.tee)

    def response(self, flow: http.HTTPFlow) -> None:
        """The reply ended: capture it."""
        self._finish(flow, "")

    def error(self, flow: http.HTTPFlow) -> None:
        """The flow broke (upstream, TLS, client): one log line; capture what arrived."""
        message = flow.error.msg if flow.error is not None else "unknown error"
        if isinstance(flow.metadata.get(_KEY), FlowState) or self._intercepted(flow):
            where = f"{flow.request.method} {flow.request.pretty_url}"
            if client_went_away(message):
                log.info("mitm: the client went away during %s (%s)", where, message)
            else:
                log.warning("mitm: %s failed: %s", where, message)
        self._finish(flow, message)

    def _finish(self, flow: http.HTTPFlow, error: str) -> None:
        state = flow.metadata.pop(_KEY, None)
        if not isinstance(state, FlowState) or state.before is None:
            return
        HOT_PATH.leave()
        status = flow.response.status_code if flow.response is not None else 502
        if state.before.context is None or state.counting:
            self.core.finish(state.before.note, status)  # the log line and record; nothing to capture
            return
        reply = state.tee.finish() if state.tee is not None else Reply()
        gone = bool(error) and client_went_away(error)
        self.core.after(
            state.before.context,
            reply,
            status=status,
            client_gone=gone,
            upstream_failed="" if gone else error,
        )
