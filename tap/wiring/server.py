"""`tap serve`: open the runtime, build the aiohttp app, run until SIGINT/SIGTERM, stop cleanly.

Start-up prints where tap listens, which store and which embedder it uses. Shutdown stops
accepting connections, gives in-flight requests and streams a grace period, then flushes
pending work and releases the store (and its data-dir lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version

from aiohttp import web

from bridges.hooks.lightconfig import remember_validated
from bridges.logtail import start_following
from bridges.mitm.spool import drain_into
from proxy.context import ServerContext
from proxy.web_app import connections_key, make_web_app
from store.chroma import ChromaStore
from store.llm import make_reply_model
from store.llm.deprecation import deprecated_model_warnings
from store.lock import DataDirInUse
from tap.admin_token import ServerInfo, clear_server_info, ensure_token, read_server_info, write_server_info
from tap.config import Config, LoadedConfig, read_secret
from tap.errors import TapError
from tap.extract.consolidation import ConsolidationJob
from tap.ingest.capture import Capture
from tap.ingest.retention import keep_pruning
from tap.intercept.conversations import ConversationResolver
from tap.intercept.core import Interceptor
from tap.intercept.scopes import scope_rule
from tap.plural import plural
from tap.recall.why import WhyLog
from tap.runtime.allocator import map_large_blocks
from tap.runtime.loop_lag import LoopLag
from tap.runtime.metrics import Metrics
from tap.runtime.priority import lower_thread_priority
from tap.runtime.startup_heap import freeze_startup_objects
from tap.runtime.tasks import create_task, running_tasks
from tap.wiring.hook_endpoint import attach_hooks
from tap.wiring.mcp_service import attach_mcp
from tap.wiring.recall_process import start_recall_process
from tap.wiring.runtime import Runtime, open_runtime

log = logging.getLogger("tap")
SHUTDOWN_GRACE_S = 10.0
SWITCH_INTERVAL_S = 0.001


def tap_version() -> str:
    """The installed package version."""
    try:
        return version("tap-memory")
    except PackageNotFoundError:
        return "0+unknown"


def build_context(rt: Runtime, token: str, capture: Capture, background: Executor | None = None) -> ServerContext:
    """The ServerContext for a runtime. `background`: the one low-priority thread for store work
    off the hot path (extraction, consolidation); a new one when not given."""
    metrics = Metrics()
    why = WhyLog(rt.loaded.config.why)
    rt.memories.holders.append(why)
    rt.memories.on_forget.append(why.forget_memories)
    interceptor = Interceptor(
        rt.loaded.config,
        recall=rt.recall,
        metrics=metrics,
        conversations=ConversationResolver(capture.turn_log),
        capture=capture,
        why=why,
    )
    background = background or ThreadPoolExecutor(1, "tap-background", initializer=lower_thread_priority)
    consolidation = ConsolidationJob(rt.consolidator, background)
    metrics.sections["capture"] = capture.status
    metrics.sections["extraction"] = rt.worker.status
    metrics.sections["intercept"] = interceptor.status
    metrics.sections["recall"] = rt.recall.status
    metrics.sections["store"] = rt.store.status
    metrics.sections["scopes"] = lambda: scope_rule(by_api_key=rt.loaded.config.proxy.scope_by_api_key)
    metrics.sections["consolidation"] = consolidation.status
    return ServerContext(
        config=rt.loaded.config,
        memories=rt.memories,
        recall=rt.recall,
        metrics=metrics,
        admin_token=token,
        interceptor=interceptor,
        capture=capture,
        ingest=rt.ingestor.ingest_async,
        version=tap_version(),
        store_location=rt.store.where,
        embedder_id=rt.embedder.model_id,
        why=why,
        consolidation=consolidation,
        inactive_search=lambda vector, scope, k: rt.store.inactive_search(vector, scope=scope, k=k),
        space=rt.space,
        store_problem=getattr(rt.store, "problem", None),
    )


async def serve_forever(
    rt: Runtime, host: str, port: int, stop: asyncio.Event, on_started: Callable[[], object] = lambda: None
) -> None:
    """Run the app on host:port until `stop` is set; `on_started` once every way in listens."""
    token = ensure_token(rt.loaded.data_dir, rt.loaded.config.admin.token_env)
    background = ThreadPoolExecutor(1, "tap-background", initializer=lower_thread_priority)
    capture = Capture(rt.turn_log, rt.ingestor.ingest_async, space=rt.space)
    ctx = build_context(rt, token, capture, background)
    app = make_web_app(ctx)
    attach_hooks(app, rt, ctx.interceptor, ctx.metrics)
    attach_mcp(app, rt, ctx.why, tap_version())
    if rt.loaded.config.telegram.enabled:
        from bridges.telegram import TelegramDeps, add_telegram  # imported only when used (seconds)

        deps = (rt.loaded.data_dir, ctx.interceptor, rt.memories, rt.ledger)
        add_telegram(app, TelegramDeps(rt.loaded.config.telegram, *deps, make_reply_model))
    runner = web.AppRunner(
        app,
        handle_signals=False,
        shutdown_timeout=SHUTDOWN_GRACE_S,
        access_log=None,
        handler_cancellation=True,  # a client that leaves cancels its request, upstream call included
        keepalive_timeout=rt.loaded.config.server.idle_timeout_s,
    )
    await runner.setup()
    connections = app[connections_key]
    connections.attach(runner.server)
    ctx.metrics.sections["connections"] = connections.status
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:  # one line saying what to do, not a traceback
        await runner.cleanup()
        raise TapError(bind_error(host, port, exc)) from None
    bound = runner.addresses[0] if runner.addresses else (host, port)
    url = f"http://{_format_host(bound[0])}:{bound[1]}"
    stop_mitm = None
    if rt.loaded.config.mitm.enabled:  # before server.json: "started" means every way in listens
        from tap.wiring.mitm_service import serve_mitm  # imports mitmproxy (seconds): only when used

        try:
            stop_mitm = await serve_mitm(rt.loaded, ctx.interceptor, ctx.metrics)
        except BaseException:
            await runner.cleanup()
            raise
    write_server_info(rt.loaded.data_dir, ServerInfo(url=url, pid=os.getpid()))
    on_started()
    with contextlib.suppress(OSError):  # a courtesy: the first hook validates the file itself otherwise
        remember_validated(rt.loaded.path, rt.loaded.config)
    _announce(rt, url)
    await asyncio.to_thread(drain_into, rt.loaded.data_dir, rt.ingestor.ingest)  # a stopped tap mitm's leftovers
    freeze_startup_objects()
    worker_stop = asyncio.Event()
    worker = create_task(rt.worker.run(worker_stop, background), name="extraction-worker")
    logtail_stop = asyncio.Event()
    start_following(rt.loaded.config.logtail, rt.loaded.data_dir, rt.ingestor.ingest, logtail_stop)
    if isinstance(rt.store, ChromaStore):
        create_task(_warm_vectors(rt.store), name="warm-vectors")
    recall_process = start_recall_process(rt)
    if recall_process is not None:
        ctx.metrics.sections["recall_process"] = recall_process.status
    lag = LoopLag()
    ctx.metrics.sections["event_loop_lag"] = lag.status
    create_task(lag.watch(logtail_stop), name="event-loop-lag")
    retention = rt.loaded.config.data.retention_days
    create_task(keep_pruning(rt.turn_log, rt.queue, retention, logtail_stop), name="retention")
    create_task(capture.keep_retrying(logtail_stop), name="capture-retry")
    create_task(connections.keep_sweeping(logtail_stop), name="connection-sweep")
    if rt.loaded.config.consolidate.enabled and ctx.consolidation is not None:
        create_task(ctx.consolidation.keep_running(logtail_stop), name="consolidation")
    try:
        await stop.wait()
        print("tap: stopping (finishing in-flight requests)…", file=sys.stderr, flush=True)
    finally:
        if stop_mitm is not None:
            await asyncio.to_thread(stop_mitm)
        logtail_stop.set()
        clear_server_info(rt.loaded.data_dir)
        await runner.cleanup()
        await _drain_background_tasks(exclude=worker)
        worker_stop.set()
        await asyncio.wait({worker}, timeout=SHUTDOWN_GRACE_S * 3)
        await _stop_background(background)
        if recall_process is not None:
            rt.recall.remote = None
            await asyncio.to_thread(recall_process.close)


async def _stop_background(background: ThreadPoolExecutor) -> None:
    """Let the background step running now (a consolidation of one scope) finish before the store is
    closed, within the grace period; queued steps are dropped (the next start picks them up)."""
    try:
        await asyncio.wait_for(asyncio.to_thread(background.shutdown, wait=True, cancel_futures=True), SHUTDOWN_GRACE_S)
    except TimeoutError:
        log.warning("a background step outlived the shutdown grace period; the consolidation journal finishes it")


async def _warm_vectors(store: ChromaStore) -> None:
    """Load the largest scopes' vectors into memory in the background (ChromaStore.warm_vectors)."""
    try:
        loaded = await asyncio.to_thread(store.warm_vectors)
    except TapError as exc:  # the store is down: scopes load on first use instead
        log.warning("could not load scope vectors at start: %s", exc)
        return
    if loaded:
        log.info("loaded the vectors of %s into memory", plural(loaded, "scope"))


async def _drain_background_tasks(exclude: asyncio.Task[None]) -> None:
    """Let captures started by the last requests finish (bounded wait)."""
    pending = running_tasks() - {exclude}
    if pending:
        await asyncio.wait(pending, timeout=SHUTDOWN_GRACE_S)


def bind_error(host: str, port: int, exc: OSError) -> str:
    """What to do when tap cannot listen on host:port."""
    where = f"{_format_host(host)}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"cannot listen on {where}: the port is already in use (another tap serve? `tap status` shows it); "
            "stop that process, or pick a free port with `tap serve --port N` or [server] port"
        )
    if exc.errno == errno.EACCES:
        return f"cannot listen on {where}: permission denied (ports below 1024 need privileges); use a port >= 1024"
    if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
        return f"cannot listen on {where}: this machine has no such address; check [server] host or --host"
    return f"cannot listen on {where}: {exc.strerror or exc}"


def _format_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _announce(rt: Runtime, url: str) -> None:
    config = rt.loaded.config
    lines = [
        f"tap {tap_version()} listening on {url}",
        f"  store:    {'Chroma server ' + config.store.url if config.store.url else 'embedded Chroma'}"
        f" at {rt.store.where} (collection {config.store.collection!r})",
        f"  embedder: {rt.embedder.model_id} ({rt.embedder.dimensions} dims)",
        f"  extract:  {_extraction_line(config)}",
        f"  data dir: {rt.loaded.data_dir}",
        f"  config:   {rt.loaded.path or 'built-in defaults'}",
        f"  admin:    token in {rt.loaded.data_dir / 'admin-token'}",
        f"  use:      ANTHROPIC_BASE_URL={url}  OPENAI_BASE_URL={url}/v1  OLLAMA_HOST={url.split('//', 1)[1]}",
    ]
    lines += [f"  {warning}" for warning in deprecated_model_warnings(config)]
    print("\n".join(lines), file=sys.stderr, flush=True)


def _extraction_line(config: Config) -> str:
    ex = config.extract
    if ex.provider == "rules" and ex.gate == "heuristic":
        return "rules (offline, no LLM)"
    models = {"anthropic": ex.model, "ollama": ex.ollama_model, "openai": f"{ex.openai_model} at {ex.openai_url}"}
    parts = [f"{ex.provider} ({models[ex.provider]}, reconcile {ex.reconcile})"] if ex.provider != "rules" else []
    if ex.gate != "heuristic":
        parts.append(f"gate {ex.gate} ({ex.gate_model if ex.gate == 'anthropic' else models[ex.gate]})")
    parts.append(f"budget ${ex.daily_budget_usd:.2f}/day")
    line = ", ".join(parts)
    if "anthropic" in (ex.provider, ex.gate) and read_secret(ex.api_key_env) is None:
        line += f"  WARNING: ${ex.api_key_env} is not set; LLM extraction will fail until it is"
    if "openai" in (ex.provider, ex.gate) and "//api.openai.com" not in ex.openai_url:
        line += "  (an OpenAI-compatible server's calls count $0: the budget does not limit them)"
    return line


def run_server(loaded: LoadedConfig, *, host: str | None = None, port: int | None = None) -> None:
    """Blocking entry point of `tap serve`. A server that never started (another one holds the
    data dir, the port is taken) raises TapError saying so; "tap: stopped" is for one that ran."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The event loop, the recall threads and the extraction threads share one GIL. A thread that
    # wants it waits for the holder's switch interval (5 ms by default), and a recall takes it
    # dozens of times: under load that wait, not the work, pushed recalls past their deadline.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    map_large_blocks()  # a 20 MB request leaves no 20 MB behind once freed (tap.runtime.allocator)
    try:
        rt = open_runtime(loaded)
    except DataDirInUse as exc:
        running = read_server_info(loaded.data_dir)
        if running is None or running.pid != exc.pid:
            raise
        raise TapError(
            f"tap serve is already running on the data dir {loaded.data_dir}, at {running.url} (pid {running.pid}): "
            "use that one, stop it first, or start this one on another data dir (TAP_HOME)"
        ) from None
    started = threading.Event()
    try:
        asyncio.run(
            _main(rt, host or loaded.config.server.host, loaded.config.server.port if port is None else port, started),
            loop_factory=_loop_factory(),
        )
    finally:
        rt.close()
        if started.is_set():
            print("tap: stopped", file=sys.stderr, flush=True)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (Linux, macOS), else asyncio's own.

    The proxy's event loop relays every chunk of every stream; uvloop's C transports made it
    cheaper (measured with bench/load.py), leaving more of the cores to recall under load.
    `TAP_EVENT_LOOP=asyncio` keeps asyncio's loop.
    """
    if os.environ.get("TAP_EVENT_LOOP", "").lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


async def _main(rt: Runtime, host: str, port: int, started: threading.Event) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await serve_forever(rt, host, port, stop, started.set)
