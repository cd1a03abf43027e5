"""The interception core: what happens to a chat request before it is forwarded and after the reply.

Every way in calls it (the proxy routes, the Telegram bridge, the mitmproxy addon, the hook
endpoints); none keeps its own copy of the policy (docs/architecture.md, Data flow).

Before (`Interceptor.before` for raw bodies, `prepare` for a decoded request, `recall_turn` for a
turn whose block the way in delivers itself: the agent hooks): `x-tap-no-memory: 1` or an
unparsable body → forward unchanged; find the latest human turn (none: forward, no capture);
resolve scope and conversation; the memory block for that human turn, recalled once under the
deadline and then reused, same bytes, by every agent-loop step and retry of that turn for
`BLOCK_TTL_S`, minus what the model already sees (tap.intercept.repeats); inject through the
dialect; answer headers `x-tap-recalled`, `x-tap-recall-ms`, `x-tap-degraded`,
`x-tap-recall-mode`, `x-tap-request-id` (tap.recall.why keeps the request's record; `finish` logs it).
Every path that does not recall says why (`x-tap-degraded`: `no-memory-requested`,
`unparsable-request`, `injection-off`, `no-human-turn`, the recall and inject failures).

After: `settle` (as soon as the reply is complete, before the client can send its next request)
remembers continuity and, for APIs that keep the history upstream (Responses
`previous_response_id` / `conversation`), where this reply left the conversation; `after` hands
the exchange to the turn log and extraction in a background task (a tool-loop step is captured as
the assistant's reply only).

Invariants: no HTTP library here (transports adapt to this); recall never runs twice for one human
turn while its block is kept; a store failure never fails a request; capture never delays it;
every result of a memory route says what became of recall: `x-tap-recall-ms` (recall ran, or its
block was reused) or `x-tap-degraded` (why it did not).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tap.config import Config
from tap.errors import RecallOverloaded
from tap.ingest.capture import Capture, Exchange
from tap.intercept.conversations import CONVERSATION_HEADER, ConversationResolver, Resolved, reply_key, turn_key
from tap.intercept.dialects import (
    ClientIds,
    Dialect,
    HumanTurn,
    JsonObject,
    PlainMessage,
    Reply,
    find_human_turn,
    newest_turn_index,
)
from tap.intercept.repeats import VisibleInRequest
from tap.intercept.scopes import resolve_scope
from tap.lru import LRU
from tap.recall.why import REQUEST_ID_HEADER, RecallTrace, RequestNote, WhyLog, log_line, new_request_id, request_log
from tap.records import Memory, Message, RecallResult, Source
from tap.runtime.metrics import Metrics
from tap.runtime.tasks import create_task

log = logging.getLogger(__name__)

NO_MEMORY_HEADER = "x-tap-no-memory"
RECALLED_HEADER = "x-tap-recalled"
RECALL_MS_HEADER = "x-tap-recall-ms"
RECALL_MODE_HEADER = "x-tap-recall-mode"
DEGRADED_HEADER = "x-tap-degraded"
NO_MEMORY_REQUESTED = "no-memory-requested"
NO_HUMAN_TURN = "no-human-turn"
INJECTION_OFF = "injection-off"
CAPTURE_FAILED = "capture-failed"
TRUE = ("1", "true", "yes", "on")
BLOCK_TTL_S = 3600.0
MAX_BLOCKS = 4096
LARGE_BODY_BYTES = 256 * 1024
"""Bodies above this are parsed (and re-encoded) in a worker thread, off the event loop."""


def _unchanged(note: RequestNote, reason: str) -> dict[str, str]:
    """The headers of a request that goes out without memories because of `reason` (kept on the note)."""
    note.degraded = reason
    return {RECALLED_HEADER: "0", DEGRADED_HEADER: reason, REQUEST_ID_HEADER: note.request_id}


class BadRequest(ValueError):
    """A request tap refuses (the transport answers 400 in the dialect's error shape)."""


class Recaller(Protocol):
    """What the core needs from recall (tap.recall.engine.RecallEngine, or a running server's over HTTP)."""

    async def recall_async(
        self,
        query: str,
        *,
        scope: str,
        deadline_ms: int | None = None,
        skip: Callable[[Memory], bool] | None = None,
        trace: RecallTrace | None = None,
    ) -> RecallResult:
        """The block for `query` in `scope`; TimeoutError past the deadline. `trace` (optional) is
        told what recall did with each candidate (tap.recall.why); a recaller that cannot trace ignores it."""
        ...


@dataclass(frozen=True)
class Upstream:
    """Where a conversation whose history lives upstream stood after one of its replies."""

    conversation: str
    turn_key: str
    turn_text: str
    length: int
    """Turns of the conversation so far, that reply included."""


class _EveryTurn(Collection[str]):
    """Every turn id (of the one conversation VisibleInRequest already checks)."""

    def __contains__(self, item: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@dataclass(frozen=True)
class RecalledBlock:
    """The memory block recalled for one human turn (`request_id`: the request that recalled it)."""

    text: str
    ids: tuple[str, ...]
    request_id: str = ""
    tokens: int = 0


@dataclass(frozen=True)
class TurnRecall:
    """What `Interceptor.recall_turn` gives: the block (empty when nothing is relevant or recall
    degraded), its memories and tokens, the request id of its `tap why` record, why it degraded."""

    text: str
    ids: tuple[str, ...]
    tokens: int
    request_id: str
    degraded: str = ""
    lexical_only: bool = False


@dataclass
class Interception:
    """Everything the after-step needs to know about one intercepted request."""

    dialect: Dialect
    scope: str
    conversation: str
    source: Source
    turn: HumanTurn
    turn_key: str
    reply_key: str
    said: Sequence[PlainMessage]
    model: str
    capture: bool
    started_at: float
    identity: Resolved | None = None
    recalled: tuple[str, ...] = ()
    degraded: str = ""
    lexical_only: bool = False
    """The block came from BM25 alone (recall's fallback under overload)."""
    settled: bool = False
    continuity_key: str = ""
    length: int = 0
    """Turns of the conversation up to this request's end (upstream ones included)."""
    thread: str = ""
    note: RequestNote | None = None


@dataclass
class Before:
    """The result of `Interceptor.before`: the body to forward (None = the original bytes), the
    response headers to add, the context for the after-step (None = nothing to capture) and the
    request's note (its id; `Interceptor.finish` logs it when there is no after-step)."""

    body: bytes | None
    headers: dict[str, str]
    context: Interception | None = None
    note: RequestNote | None = None


@dataclass
class Prepared:
    """The result of `Interceptor.prepare`: the request to send and its context."""

    request: JsonObject
    headers: dict[str, str]
    context: Interception | None = None
    note: RequestNote | None = None


@dataclass
class _Counters:
    recalls: int = 0
    blocks_reused: int = 0
    lexical_only: int = 0


class Interceptor:
    """The before/after policy shared by every way in (see the module docstring)."""

    def __init__(
        self,
        config: Config,
        *,
        recall: Recaller,
        metrics: Metrics,
        conversations: ConversationResolver,
        capture: Capture | None = None,
        why: WhyLog | None = None,
    ) -> None:
        self.config = config
        self.recall = recall
        self.metrics = metrics
        self.conversations = conversations
        self.capture = capture
        self.why = why
        self._blocks: LRU[tuple[str, str, str], RecalledBlock] = LRU(MAX_BLOCKS, ttl_s=BLOCK_TTL_S)
        self._upstream: LRU[tuple[str, str], Upstream] = LRU(MAX_BLOCKS, ttl_s=BLOCK_TTL_S)
        self._counters = _Counters()

    # -- before -------------------------------------------------------------------------------

    def note(self, method: str = "POST", path: str = "", *, keep: bool = True) -> RequestNote:
        """A new request: its id (`x-tap-request-id`) and what `finish` logs (and, with `keep`,
        keeps for `tap why`)."""
        return RequestNote(new_request_id(), method=method, path=path, keep=keep)

    async def before(
        self,
        dialect: Dialect,
        headers: Mapping[str, str],
        body: bytes,
        *,
        source: Source = "proxy",
        method: str = "POST",
        path: str = "",
    ) -> Before:
        """The before-step for a raw request body (proxy, mitmproxy addon).

        `headers` must look names up case-insensitively (aiohttp's and mitmproxy's do).
        Raises `BadRequest` for a malformed `x-tap-scope`. Every result carries the request's note
        and its `x-tap-request-id` header.
        """
        note = self.note(method, path)
        if headers.get(NO_MEMORY_HEADER, "").lower() in TRUE:
            return Before(None, _unchanged(note, NO_MEMORY_REQUESTED), note=note)
        large = len(body) > LARGE_BODY_BYTES
        # A large body is read in a worker thread: parsing it, its transcript and the conversation's
        # fingerprints on the event loop would stall every other stream meanwhile.
        read = (
            await asyncio.to_thread(self._read, dialect, headers, body, note)
            if large
            else self._read(dialect, headers, body, note)
        )
        if isinstance(read, Before):
            return read
        req, scope, said, client, upstream, identity = read
        proxy = self.config.proxy
        prepared = await self.prepare(
            dialect,
            req,
            scope=scope,
            conversation=identity.conversation,
            source=source,
            said=said,
            identity=identity,
            inject=proxy.inject,
            capture=proxy.capture,
            upstream=upstream,
            thread=client.thread,
            note=note,
        )
        body_out = None
        if prepared.request is not req:
            body_out = (
                await asyncio.to_thread(dialect.encode, prepared.request) if large else dialect.encode(prepared.request)
            )
        if (
            prepared.context is not None
            and prepared.context.capture
            and self.capture is not None
            and self.capture.failing
        ):
            self._capture_failing(prepared.headers, note)
        return Before(body_out, prepared.headers, prepared.context, note)

    def _capture_failing(self, headers: dict[str, str], note: RequestNote) -> None:
        """Flag a request whose exchange cannot be captured now (it waits in memory and is retried:
        tap.ingest.capture.Capture), beside a recall reason if there is one."""
        reason = ", ".join(filter(None, (headers.get(DEGRADED_HEADER, ""), CAPTURE_FAILED)))
        headers[DEGRADED_HEADER] = note.degraded = reason
        self.metrics.degraded[CAPTURE_FAILED] += 1  # counted; Capture logs the failures themselves

    def _read(
        self, dialect: Dialect, headers: Mapping[str, str], body: bytes, note: RequestNote
    ) -> Before | tuple[JsonObject, str, Sequence[PlainMessage], ClientIds, Upstream | None, Resolved]:
        """Parse a request and resolve its scope and conversation; a `Before` when it goes out as
        it came (unparsable, nothing to do). Raises `BadRequest` for a malformed `x-tap-scope`."""
        try:
            req = dialect.parse_request(body)
        except ValueError as exc:
            self.metrics.degrade("bad-request-body", str(exc))
            return Before(None, _unchanged(note, "unparsable-request"), note=note)
        try:
            scope = resolve_scope(headers, by_api_key=self.config.proxy.scope_by_api_key)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        note.scope = scope
        proxy = self.config.proxy
        said = dialect.transcript(req)
        client = dialect.client_ids(req)
        upstream = self._upstream_of(scope, client.follows, client.thread)
        if not (proxy.inject or proxy.capture):
            return Before(None, _unchanged(note, INJECTION_OFF), note=note)
        if find_human_turn(said) is None and upstream is None:
            return Before(None, _unchanged(note, NO_HUMAN_TURN), note=note)
        identity = self.conversations.resolve(
            headers,
            scope,
            client,
            said,
            system=dialect.system_text(req),
            model=dialect.model_of(req),
        )
        if upstream is not None and not headers.get(CONVERSATION_HEADER, "").strip():
            identity = Resolved(upstream.conversation, "upstream", scope, client.discriminator)
        return req, scope, said, client, upstream, identity

    async def prepare(
        self,
        dialect: Dialect,
        req: JsonObject,
        *,
        scope: str,
        conversation: str,
        source: Source = "proxy",
        said: Sequence[PlainMessage] | None = None,
        identity: Resolved | None = None,
        turn_id: str = "",
        visible_turns: Collection[str] | None = None,
        deadline_ms: int | None = None,
        inject: bool = True,
        capture: bool = True,
        upstream: Upstream | None = None,
        thread: str = "",
        note: RequestNote | None = None,
    ) -> Prepared:
        """The before-step for a decoded request whose scope and conversation are known.

        `turn_id` names the human turn when the caller has its own ids (Telegram); `visible_turns`
        are the ids of the turns in the request when they are not the ones tap.intercept.conversations derives.
        `upstream` is where the conversation stood when its history lives upstream (see the module
        docstring; `thread` names its upstream conversation).  The context is None when the
        request has no human turn. `note` is the request's (a new one when not given).
        """
        note = note or self.note("POST", f"<{source}>")  # a bridge without HTTP (Telegram)
        note.scope, note.conversation = scope, conversation
        said = dialect.transcript(req) if said is None else said
        turn = find_human_turn(said)
        headers = {RECALLED_HEADER: "0", REQUEST_ID_HEADER: note.request_id}
        offset = upstream.length if upstream is not None else 0
        newest = newest_turn_index(said)
        if turn is None and upstream is not None and newest is not None and said[newest].role == "tool":
            turn = HumanTurn(-1, upstream.turn_text, tool_step=True)  # the step of an upstream human turn
            turn_id = turn_id or upstream.turn_key
        if turn is None:
            return Prepared(req, _unchanged(note, NO_HUMAN_TURN), note=note)
        last = said[-1]
        ctx = Interception(
            dialect=dialect,
            scope=scope,
            conversation=conversation,
            source=source,
            turn=turn,
            turn_key=turn_id or turn_key(conversation, offset + turn.index + 1, turn.text),
            reply_key=reply_key(conversation, offset + len(said), last.text if last.role == "user" else ""),
            said=said,
            model=dialect.model_of(req),
            capture=capture,
            started_at=time.time(),
            identity=identity,
            length=offset + len(said),
            thread=thread,
            note=note,
        )
        if not inject:
            return Prepared(req, _unchanged(note, INJECTION_OFF), ctx, note)
        if upstream is not None or thread:
            visible_turns = _EveryTurn()  # the conversation's history is upstream: the model sees it
        visible = VisibleInRequest(conversation, said, dialect.system_text(req), turn_ids=visible_turns)
        started = time.perf_counter()
        block = await self._block(ctx, visible, deadline_ms)
        note.recall_ms = (time.perf_counter() - started) * 1000
        if ctx.degraded:
            headers[DEGRADED_HEADER] = note.degraded = ctx.degraded
            return Prepared(req, headers, ctx, note)
        headers[RECALL_MS_HEADER] = f"{note.recall_ms:.1f}"
        if ctx.lexical_only:
            headers[RECALL_MODE_HEADER] = "lexical-only"
        if block is None or not block.text:
            return Prepared(req, headers, ctx, note)
        try:
            rewritten = dialect.inject(req, block.text)
        except ValueError as exc:
            ctx.degraded = headers[DEGRADED_HEADER] = note.degraded = "inject-error"
            self._degrade("inject-error", str(exc))
            return Prepared(req, headers, ctx, note)
        ctx.recalled = block.ids
        note.injected = len(block.ids)
        headers[RECALLED_HEADER] = str(len(block.ids))
        return Prepared(rewritten, headers, ctx, note)

    async def _block(
        self, ctx: Interception, visible: VisibleInRequest, deadline_ms: int | None
    ) -> RecalledBlock | None:
        """The human turn's block: kept from an earlier request of the turn, else recalled now."""
        block, ctx.degraded, ctx.lexical_only = await self._turn_block(
            (ctx.scope, ctx.conversation, ctx.turn_key), ctx.turn.text, ctx.note, visible, deadline_ms, self.recall
        )
        return block

    async def _turn_block(
        self,
        key: tuple[str, str, str],
        text: str,
        note: RequestNote | None,
        skip: Callable[[Memory], bool] | None,
        deadline_ms: int | None,
        recaller: Recaller,
    ) -> tuple[RecalledBlock | None, str, bool]:
        """A turn's block (kept, else recalled under the deadline), why it is missing ('' when it is
        not), and whether it came from BM25 alone."""
        kept = self._blocks.get(key)
        if kept is not None:
            self._counters.blocks_reused += 1
            if note is not None:
                note.reused_from = kept.request_id
            return kept, "", False
        deadline = deadline_ms or self.config.recall.deadline_ms
        trace = RecallTrace() if note is not None and note.keep and self.why is not None and self.why.enabled else None
        if note is not None:
            note.trace = trace
        traced = {"trace": trace} if trace is not None else {}  # a recaller without tracing never sees it
        try:
            result = await recaller.recall_async(text, scope=key[0], deadline_ms=deadline, skip=skip, **traced)
        except RecallOverloaded as exc:
            self._degrade("overloaded", f"{exc} (more recalls waiting than finish within {deadline} ms)")
            return None, "recall-overloaded", False
        except TimeoutError:
            self._degrade("deadline", f"recall took longer than {deadline} ms")
            return None, f"recall-deadline-{deadline}ms", False
        except Exception as exc:  # any store/embedder failure: never fail the user's request
            self._degrade("recall-error", f"{type(exc).__name__}: {exc}")
            return None, "recall-error", False
        self._counters.recalls += 1
        if result.lexical_only:
            self._counters.lexical_only += 1
        self.metrics.recall_done(result.elapsed_ms, len(result.memories))
        block = RecalledBlock(
            result.block,
            tuple(r.memory.id for r in result.memories),
            note.request_id if note else "",
            result.tokens,
        )
        self._blocks.put(key, block)
        return block, "", result.lexical_only

    async def recall_turn(
        self,
        text: str,
        *,
        scope: str,
        conversation: str,
        turn_key: str,
        path: str,
        skip: Callable[[Memory], bool] | None = None,
        deadline_ms: int | None = None,
        recaller: Recaller | None = None,
    ) -> TurnRecall:
        """The block for a turn a way in without a request body to rewrite hands over (the agent
        hooks add it to the agent's context themselves): the same policy as `prepare` (kept per
        turn, the deadline, degraded reasons and their counts, the request log line and its `tap
        why` record under `path`). `recaller`: another source of blocks (the session-start digest,
        tap.recall.digest) under the same policy; the configured recall by default."""
        note = self.note("POST", path)
        note.scope, note.conversation = scope, conversation
        started = time.perf_counter()
        block, degraded, lexical_only = await self._turn_block(
            (scope, conversation, turn_key), text, note, skip, deadline_ms, recaller or self.recall
        )
        note.recall_ms = (time.perf_counter() - started) * 1000
        note.degraded = degraded
        if block is not None:
            note.injected = len(block.ids)
        self.finish(note, 200)
        if block is None:
            return TurnRecall("", (), 0, note.request_id, degraded)
        return TurnRecall(block.text, block.ids, block.tokens, note.request_id, "", lexical_only)

    def _degrade(self, reason: str, detail: str) -> None:
        self.metrics.degrade(reason, detail)

    def _upstream_of(self, scope: str, follows: str, thread: str) -> Upstream | None:
        """Where the conversation a request continues stood (None when unknown or not upstream)."""
        if follows:
            return self._upstream.get((scope, "reply:" + follows))
        if thread:
            return self._upstream.get((scope, "thread:" + thread))
        return None

    def _remember_upstream(self, ctx: Interception, reply: Reply) -> None:
        if not (reply.response_id or ctx.thread) or not reply.complete or reply.error:
            return
        where = Upstream(ctx.conversation, ctx.turn_key, ctx.turn.text, ctx.length + 1)
        if reply.response_id:
            self._upstream.put((ctx.scope, "reply:" + reply.response_id), where)
        if ctx.thread:
            self._upstream.put((ctx.scope, "thread:" + ctx.thread), where)

    # -- after ---------------------------------------------------------------------------------

    def settle(self, ctx: Interception, reply: Reply) -> None:
        """The reply is complete: remember the conversation's continuity (at once, in memory)."""
        if ctx.settled:
            return
        ctx.settled = True
        self._remember_upstream(ctx, reply)
        if ctx.identity is not None and reply.complete and not reply.error:
            ctx.continuity_key = self.conversations.answered(ctx.identity, ctx.said, reply.text)

    def after(
        self,
        ctx: Interception,
        reply: Reply,
        *,
        status: int = 200,
        client_gone: bool = False,
        upstream_failed: str = "",
        user: Message | None = None,
        earlier: Sequence[Message] = (),
        reply_id: str = "",
    ) -> asyncio.Task[None] | None:
        """Settle, then log and hand the exchange to extraction in a background task (returned, so
        a caller may await it; None when there is nothing to do).

        `user`, `earlier` and `reply_id` let a bridge with its own message ids (Telegram) say what
        the human turn was; by default it is the request's human turn with tap's ids.
        """
        if 200 <= status < 300:
            self.settle(ctx, reply)
        if ctx.note is not None:
            self.finish(ctx.note, status)
        exchange = self._exchange(ctx, reply, status, client_gone, upstream_failed, user, earlier, reply_id)
        persist = ctx.continuity_key
        if exchange is None and not persist:
            return None
        return create_task(self._finish(ctx, exchange, persist), name=f"capture-{ctx.conversation}")

    def _exchange(
        self,
        ctx: Interception,
        reply: Reply,
        status: int,
        client_gone: bool,
        upstream_failed: str,
        user: Message | None,
        earlier: Sequence[Message],
        reply_id: str,
    ) -> Exchange | None:
        worth = 200 <= status < 300 or bool(reply.text)
        if not ctx.capture or self.capture is None or not worth:
            return None
        if ctx.turn.tool_step and user is None and not reply.text.strip():
            return None  # a tool step without visible text: nothing to remember
        step = ctx.turn.tool_step
        human = user or Message(role="user", content="" if step else ctx.turn.text, id="" if step else ctx.turn_key)
        return Exchange(
            scope=ctx.scope,
            conversation=ctx.conversation,
            source=ctx.source,
            dialect=ctx.dialect.name,
            model=reply.model or ctx.model,
            user_turn_id=human.id,
            user_text=human.content,
            user_name=human.name,
            earlier=list(earlier),
            reply_turn_id=reply_id or ctx.reply_key,
            reply_text=reply.text,
            usage=reply.usage,
            status=status,
            complete=reply.complete and not client_gone,
            error=reply.error or upstream_failed or ("client disconnected" if client_gone else ""),
            started_at=human.timestamp or ctx.started_at,
            finished_at=time.time(),
        )

    async def _finish(self, ctx: Interception, exchange: Exchange | None, persist: str) -> None:
        if persist:
            try:
                await asyncio.to_thread(self.conversations.persist, persist, ctx.conversation)
            except Exception:
                log.exception("could not persist the continuity of conversation %s", ctx.conversation)
        if exchange is not None and self.capture is not None:
            await self.capture.record(exchange)

    def finish(self, note: RequestNote | None, status: int) -> None:
        """The request is over: its one log line, and its record for `tap why` (once; `after`
        calls this itself, a transport calls it for a request without an after-step)."""
        if note is None or note.finished:
            return
        note.finished = True
        duration_ms = (time.perf_counter() - note.started) * 1000
        request_log.info(log_line(note, status, duration_ms))
        if note.keep and self.why is not None and self.why.enabled:
            try:
                self.why.record(note, status, duration_ms)  # keeps the note: the record is made when read
            except Exception:  # a record is a convenience: it never fails anything
                log.exception("could not keep the recall record of request %s", note.request_id)

    def status(self) -> dict[str, int]:
        """Counters for /tap/status: recalls run, blocks reused by later requests of a turn."""
        return {
            "recalls": self._counters.recalls,
            "blocks_reused": self._counters.blocks_reused,
            "lexical_only": self._counters.lexical_only,
        }
