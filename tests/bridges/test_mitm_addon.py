"""TapAddon's hooks, driven with mitmproxy's own test helpers (taddons, tflow, tutils) and a real
interception core (recall stands in for the store with a fixed block; capture writes a real turn log)."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import connection, flow, http, tls
from mitmproxy.proxy.context import Context
from mitmproxy.proxy.layers.tls import parse_client_hello
from mitmproxy.test import taddons, tflow, tutils

from bridges.mitm.addon import TapAddon, declared_length, route_of
from bridges.mitm.hosts import HostPolicy
from bridges.mitm.link import CoreLink
from tap.config import Config
from tap.ingest.capture import Capture, TurnLog
from tap.intercept.conversations import ConversationResolver
from tap.intercept.core import Interceptor
from tap.intercept.dialects import ANTHROPIC, OPENAI_RESPONSES
from tap.records import IngestEvent, Memory, Recalled, RecallResult, make_memory
from tap.runtime.metrics import Metrics
from tap.runtime.priority import HOT_PATH
from tap.runtime.tasks import running_tasks
from testkit.upstreams import AWKWARD_CHUNKS, chunks, load_transcript

API = "api.anthropic.com"
BLOCK = "<recalled-memories>\n- The user plays the cello\n</recalled-memories>"


class FixedRecall:
    """A Recaller that always finds the same memory (the store is not what these tests are about)."""

    def __init__(self, *, fail: Exception | None = None) -> None:
        self.memory = make_memory(scope="default", content="The user plays the cello")
        self.fail = fail
        self.queries: list[str] = []

    async def recall_async(
        self, query: str, *, scope: str, deadline_ms: int | None = None, skip: Callable[[Memory], bool] | None = None
    ) -> RecallResult:
        self.queries.append(query)
        if self.fail is not None:
            raise self.fail
        return RecallResult(block=BLOCK, tokens=20, memories=[Recalled(memory=self.memory, score=1.0, tokens=20)])


class Core:
    """A real interceptor over FixedRecall, with a real turn log; events land in `events`."""

    def __init__(self, tmp: Path, **recall: Any) -> None:
        self.events: list[IngestEvent] = []
        self.turn_log = TurnLog(tmp / "turnlog.db")
        self.recall = FixedRecall(**recall)
        self.interceptor = Interceptor(
            Config(),
            recall=self.recall,
            metrics=Metrics(),
            conversations=ConversationResolver(self.turn_log),
            capture=Capture(self.turn_log, self._ingest),
        )
        self.addon = TapAddon(CoreLink(self.interceptor), HostPolicy.parse([API, "localhost:11434"]))

    async def _ingest(self, event: IngestEvent) -> int:
        self.events.append(event)
        return 1

    async def settle(self) -> None:
        pending = running_tasks()
        if pending:
            await asyncio.wait(pending, timeout=5)


@pytest.fixture
def core(tmp_path: Path) -> Core:
    made = Core(tmp_path)
    yield made  # type: ignore[misc]
    made.turn_log.close()


def api_flow(
    path: str = "/v1/messages", body: Any = None, host: str = API, port: int = 443, **headers: str
) -> http.HTTPFlow:
    payload = (
        body
        if body is not None
        else {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "cello?"}]}
    )
    hdrs = http.Headers(content_type="application/json", **headers)
    request = tutils.treq(
        host=host,
        port=port,
        scheme=b"https",
        method=b"POST",
        path=path.encode(),
        headers=hdrs,
        content=json.dumps(payload).encode(),
    )
    return tflow.tflow(req=request)


def answer(f: http.HTTPFlow, content_type: str, length: int | None = None, status: int = 200) -> None:
    headers = http.Headers(content_type=content_type)
    if length is not None:
        headers["content-length"] = str(length)
    f.response = tutils.tresp(status_code=status, headers=headers, content=None)


def client_hello(sni: str | None) -> tls.ClientHello:
    """A real ClientHello, as Python's ssl sends it."""
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    sock = context.wrap_bio(incoming, outgoing, server_hostname=sni)
    with pytest.raises(ssl.SSLWantReadError):
        sock.do_handshake()
    parsed = parse_client_hello(outgoing.read())
    assert parsed is not None
    return parsed


def hello_data(sni: str | None, address: tuple[str, int]) -> tls.ClientHelloData:
    with taddons.context() as tctx:
        context = Context(tflow.tclient_conn(), tctx.options)
    context.server = connection.Server(address=address)
    return tls.ClientHelloData(context, client_hello(sni))


# --- connections and routes ------------------------------------------------------------------------


def test_tls_is_terminated_only_for_intercepted_hosts(core: Core) -> None:
    cases = [
        (API, (API, 443), False),
        ("example.com", ("example.com", 443), True),
        (None, ("127.0.0.1", 8443), True),
        (None, ("localhost", 11434), False),
        ("API.Anthropic.com.", (API, 443), False),
    ]
    for sni, address, ignored in cases:
        data = hello_data(sni, address)
        core.addon.tls_clienthello(data)
        assert data.ignore_connection is ignored, (sni, address)


def test_routes() -> None:
    assert route_of(api_flow("/v1/messages?beta=true")) == (ANTHROPIC, False)
    assert route_of(api_flow("/v1/responses")) == (OPENAI_RESPONSES, False)
    assert route_of(api_flow("/v1/messages/count_tokens")) == (ANTHROPIC, True)
    assert route_of(api_flow("/v1/models")) is None
    get = api_flow()
    get.request.method = "GET"
    assert route_of(get) is None


def test_other_flows_are_streamed_untouched(core: Core) -> None:
    other = api_flow(host="example.com")
    models = api_flow("/v1/models")
    for f in (other, models):
        core.addon.requestheaders(f)
        assert f.request.stream is True and "tap" not in f.metadata
        answer(f, "application/json")
        core.addon.responseheaders(f)
        assert f.response is not None and f.response.stream is True and "x-tap-recalled" not in f.response.headers
    mine = api_flow()
    core.addon.requestheaders(mine)
    assert mine.request.stream is False and "tap" in mine.metadata


# --- a whole exchange ------------------------------------------------------------------------------


async def test_request_gets_the_block_and_the_stream_is_teed_unchanged(core: Core) -> None:
    f = api_flow(**{"x-tap-scope": "default", "x-api-key": "sk", "accept-encoding": "gzip"})
    relaying = HOT_PATH.serving_now
    with taddons.context(core.addon):
        core.addon.requestheaders(f)
        await core.addon.request(f)
        assert HOT_PATH.serving_now == relaying + 1  # counted until the reply ends (tap.runtime.priority)
        sent = json.loads(f.request.content or b"")
        assert sent["messages"][0]["content"] == [{"type": "text", "text": "cello?"}, {"type": "text", "text": BLOCK}]
        assert "x-tap-scope" not in f.request.headers and f.request.headers["x-api-key"] == "sk"
        assert f.request.headers["accept-encoding"] == "identity"
        assert f.request.headers["content-length"] == str(len(f.request.content or b""))
        answer(f, "text/event-stream")
        core.addon.responseheaders(f)
        assert f.response is not None and f.response.headers["x-tap-recalled"] == "1"
        stream = f.response.stream
        assert callable(stream)
        raw = load_transcript("anthropic_stream.sse")
        out = [stream(piece) for piece in chunks(raw, AWKWARD_CHUNKS)]
        assert b"".join(out) == raw and all(a == b for a, b in zip(out, chunks(raw, AWKWARD_CHUNKS), strict=True))
        assert stream(b"") == b""
        core.addon.response(f)
        assert HOT_PATH.serving_now == relaying
        await core.settle()
    (event,) = core.events
    assert event.source == "mitm" and [m.role for m in event.messages] == ["user", "assistant"]
    assert event.messages[0].content == "cello?" and core.recall.queries == ["cello?"]
    assert "tap" not in f.metadata


async def test_a_request_that_already_carries_a_block_is_captured_and_recalled_without_it(core: Core) -> None:
    echoed = [{"type": "text", "text": "cello?"}, {"type": "text", "text": BLOCK}]  # tap's own request, again
    f = api_flow(body={"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": echoed}]})
    with taddons.context(core.addon):
        core.addon.requestheaders(f)
        await core.addon.request(f)
        answer(f, "text/event-stream")
        core.addon.responseheaders(f)
        stream = f.response.stream if f.response is not None else None
        assert callable(stream)
        stream(load_transcript("anthropic_stream.sse"))
        stream(b"")
        core.addon.response(f)
        await core.settle()
    (event,) = core.events
    assert event.messages[0].content == "cello?" and core.recall.queries == ["cello?"]
    assert all("<recalled-memories>" not in e.user_text for e in core.turn_log.recent())


async def test_settled_before_the_chunk_that_completes_the_reply(core: Core) -> None:
    f = api_flow()
    core.addon.requestheaders(f)
    await core.addon.request(f)
    answer(f, "text/event-stream")
    core.addon.responseheaders(f)
    assert f.response is not None and callable(f.response.stream)
    raw = load_transcript("anthropic_stream.sse")
    state = f.metadata["tap"]
    assert not state.before.context.settled
    f.response.stream(raw)  # the terminal event is in this chunk: settled before it is returned
    assert state.before.context.settled
    core.addon.response(f)
    await core.settle()


async def test_whole_json_reply_and_count_tokens(core: Core) -> None:
    body = load_transcript("anthropic_message.json")
    f = api_flow()
    core.addon.requestheaders(f)
    await core.addon.request(f)
    answer(f, "application/json", length=len(body))
    core.addon.responseheaders(f)
    assert f.response is not None and callable(f.response.stream)
    assert f.response.stream(body) == body
    core.addon.response(f)
    count = api_flow("/v1/messages/count_tokens")
    core.addon.requestheaders(count)
    await core.addon.request(count)
    assert json.loads(count.request.content or b"")["messages"][0]["content"][1]["text"] == BLOCK
    answer(count, "application/json")
    core.addon.responseheaders(count)
    assert count.response is not None and count.response.stream is True  # not teed
    assert count.response.headers["x-tap-recalled"] == "1"
    core.addon.response(count)
    await core.settle()
    assert len(core.events) == 1, "counting is not captured"


async def test_bad_scope_is_answered_locally_in_the_dialect_shape(core: Core) -> None:
    f = api_flow(**{"x-tap-scope": "bad scope!"})
    relaying = HOT_PATH.serving_now
    core.addon.requestheaders(f)
    await core.addon.request(f)
    assert f.response is not None and f.response.status_code == 400
    assert HOT_PATH.serving_now == relaying
    assert json.loads(f.response.content or b"")["type"] == "error" and "tap" not in f.metadata


async def test_recall_failure_degrades_and_a_broken_core_forwards_unchanged(tmp_path: Path) -> None:
    failing = Core(tmp_path / "a", fail=RuntimeError("store down"))
    f = api_flow()
    failing.addon.requestheaders(f)
    original = f.request.content
    await failing.addon.request(f)
    answer(f, "application/json")
    failing.addon.responseheaders(f)
    assert f.request.content == original and f.response is not None
    assert f.response.headers["x-tap-degraded"] == "recall-error"
    failing.addon.response(f)  # every flow ends, as mitmproxy ends them
    await failing.settle()
    failing.turn_log.close()

    class Broken(Interceptor):
        async def before(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("a bug in the core")

    broken = Core(tmp_path / "b")
    broken.addon.core = CoreLink(
        Broken(Config(), recall=broken.recall, metrics=Metrics(), conversations=ConversationResolver())
    )
    g = api_flow()
    broken.addon.requestheaders(g)
    await broken.addon.request(g)
    answer(g, "application/json")
    broken.addon.responseheaders(g)
    assert g.request.content == original and g.response is not None
    assert g.response.headers["x-tap-degraded"] == "intercept-error" and g.response.stream is True
    broken.addon.response(g)
    await broken.settle()
    broken.turn_log.close()


async def test_client_gone_mid_stream_is_one_line_and_a_partial_capture(
    core: Core, caplog: pytest.LogCaptureFixture
) -> None:
    f = api_flow()
    core.addon.requestheaders(f)
    await core.addon.request(f)
    answer(f, "text/event-stream")
    core.addon.responseheaders(f)
    raw = load_transcript("anthropic_stream.sse")
    assert f.response is not None and callable(f.response.stream)
    f.response.stream(raw[: len(raw) // 2])
    f.error = flow.Error("Client disconnected.")
    with caplog.at_level(logging.INFO, logger="tap.mitm"):
        core.addon.error(f)
    await core.settle()
    assert [r.getMessage() for r in caplog.records] == [
        f"mitm: the client went away during POST https://{API}/v1/messages (Client disconnected.)"
    ]
    (exchange,) = core.turn_log.recent()
    assert not exchange.complete and exchange.error == "client disconnected" and exchange.reply_text


async def test_upstream_failure_before_the_response_is_one_warning(
    core: Core, caplog: pytest.LogCaptureFixture
) -> None:
    f = api_flow()
    relaying = HOT_PATH.serving_now
    core.addon.requestheaders(f)
    await core.addon.request(f)
    f.error = flow.Error("Connection refused")
    with caplog.at_level(logging.INFO, logger="tap.mitm"):
        core.addon.error(f)
    assert HOT_PATH.serving_now == relaying
    await core.settle()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", f"mitm: POST https://{API}/v1/messages failed: Connection refused")
    ]
    assert core.events == [] and core.turn_log.recent() == []


def test_declared_length() -> None:
    f = api_flow()
    answer(f, "application/json", length=12)
    assert f.response is not None and declared_length(f.response) == 12
    f.response.headers["transfer-encoding"] = "chunked"
    assert declared_length(f.response) is None
