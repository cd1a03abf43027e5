"""Wiring of the mitmproxy way in (bridges.mitm) over tap's real interceptor, store and pipeline.

Two places run it:
- `tap serve` with `[mitm] enabled = true` (`serve_mitm`): mitmproxy runs in its own thread and
  its addon calls the server's own interceptor on the server's loop, so the proxy and mitm share
  one conversation state, one block per human turn, one turn log and one extraction worker;
- `tap mitm` (`run_standalone`), decided once at start:
  - when a `tap serve` runs on the data dir (server.json), recall and ingestion go through its
    admin API (bridges.mitm.remote; only one process may open the embedded store), and this
    process keeps the conversation state and the turn log (shared SQLite) itself; while that
    server does not answer, captured exchanges wait in a spool on disk (bridges.mitm.spool);
  - otherwise it opens the store itself (taking the data-dir lock, like `tap serve`) and runs the
    extraction worker, so what it captures is extracted without a server (and first takes what an
    earlier `tap mitm` left in the spool).
Both print where mitmproxy listens and the shell lines for clients (`tap env` prints them too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable

from bridges.mitm.ca import CaFiles, trust_lines
from bridges.mitm.link import CoreLink
from bridges.mitm.remote import AdminApiRecaller
from bridges.mitm.runner import Listening, MitmProxy, MitmSettings, MitmThread
from bridges.mitm.spool import SPOOL_FILE, Spool, SpooledIngest, drain_into
from tap.admin_token import ensure_token, read_server_info
from tap.config import LoadedConfig
from tap.ingest.capture import Capture, TurnLog
from tap.intercept.conversations import ConversationResolver
from tap.intercept.core import Interceptor
from tap.runtime.metrics import Metrics
from tap.runtime.startup_heap import freeze_startup_objects
from tap.runtime.tasks import create_task, running_tasks
from tap.wiring.runtime import Runtime, open_runtime

log = logging.getLogger("tap.mitm")
DRAIN_S = 10.0


def settings_of(loaded: LoadedConfig) -> MitmSettings:
    """The `[mitm]` settings (ConfigError for a bad reverse spec or host)."""
    return MitmSettings.from_config(loaded.config.mitm, loaded.data_dir)


def client_lines(settings: MitmSettings, listening: list[Listening], ca: CaFiles) -> list[str]:
    """Shell lines pointing clients at the running mitm (regular mode first, then reverse)."""
    regular = next((item.url for item in listening if item.mode.startswith("regular")), "")
    lines = trust_lines(ca, regular) if regular else []
    for target, item in zip(settings.reverse, [i for i in listening if i.mode.startswith("reverse")], strict=False):
        lines.append(f"# reverse: {item.url} → {target.url} (no CA needed); point the client's base URL at it")
    return lines


async def serve_mitm(loaded: LoadedConfig, interceptor: Interceptor, metrics: Metrics) -> Callable[[], None]:
    """Start mitmproxy beside `tap serve` (TapError when it cannot listen); returns how to stop it."""
    settings = settings_of(loaded)
    thread = MitmThread(settings, CoreLink(interceptor, asyncio.get_running_loop()))
    listening = list(await asyncio.to_thread(thread.start))
    metrics.sections["mitm"] = thread.proxy.status
    _announce(settings, listening, thread.proxy)
    return thread.stop


def _announce(settings: MitmSettings, listening: list[Listening], proxy: MitmProxy) -> None:
    where = ", ".join(f"{item.url} ({item.mode.split(':', 1)[0].split('@', 1)[0]})" for item in listening)
    lines = [f"  mitm:     {where}; intercepting {settings.policy().describe()}"]
    if proxy.ca is not None:
        lines.append(f"  mitm CA:  {proxy.ca.cert} (`tap mitm ca` shows how clients trust it)")
    print("\n".join(lines), file=sys.stderr, flush=True)


def run_standalone(loaded: LoadedConfig, settings: MitmSettings) -> None:
    """Blocking entry point of `tap mitm` (see the module docstring)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    info = read_server_info(loaded.data_dir)
    if info is not None:
        token = ensure_token(loaded.data_dir, loaded.config.admin.token_env)
        print(f"tap mitm: recall and ingestion through tap serve at {info.url}", file=sys.stderr, flush=True)
        asyncio.run(_remote(loaded, settings, info.url, token))
        return
    rt = open_runtime(loaded)
    started = threading.Event()
    try:
        print(f"tap mitm: store at {rt.store.where} (no tap serve running)", file=sys.stderr, flush=True)
        asyncio.run(_embedded(rt, settings, started))
    finally:
        rt.close()
        if started.is_set():  # one that could not listen said why instead
            print("tap mitm: stopped", file=sys.stderr, flush=True)


async def _remote(loaded: LoadedConfig, settings: MitmSettings, url: str, token: str) -> None:
    recall = AdminApiRecaller(url, token, loaded.config.recall.budget_tokens)
    turn_log = TurnLog(loaded.data_dir / "turnlog.db")
    spool = Spool(loaded.data_dir / SPOOL_FILE)

    async def locate() -> str | None:
        """The server answering on the data dir now (followed by recall and ingestion), if any."""
        info = read_server_info(loaded.data_dir)
        return info.url if info is not None and await recall.answers(info.url) else None

    ingest = SpooledIngest(spool, recall.ingest, locate)  # exchanges wait on disk while the server is away
    sending_stop = asyncio.Event()
    sending = create_task(ingest.run(sending_stop), name="mitm-spool")
    try:
        capture = Capture(turn_log, ingest.ingest)
        interceptor = Interceptor(
            loaded.config,
            recall=recall,
            metrics=Metrics(),
            conversations=ConversationResolver(turn_log),
            capture=capture,
        )
        await _run(settings, interceptor)
    finally:
        sending_stop.set()
        await asyncio.wait({sending}, timeout=DRAIN_S)
        await recall.close()
        spool.close()
        turn_log.close()


async def _embedded(rt: Runtime, settings: MitmSettings, started: threading.Event) -> None:
    await asyncio.to_thread(drain_into, rt.loaded.data_dir, rt.ingestor.ingest)  # left by a tap mitm before
    capture = Capture(rt.turn_log, rt.ingestor.ingest_async)
    interceptor = Interceptor(
        rt.loaded.config,
        recall=rt.recall,
        metrics=Metrics(),
        conversations=ConversationResolver(rt.turn_log),
        capture=capture,
    )
    worker_stop = asyncio.Event()
    worker = create_task(rt.worker.run(worker_stop), name="extraction-worker")
    try:
        await _run(settings, interceptor, started)
    finally:
        worker_stop.set()
        await asyncio.wait({worker}, timeout=DRAIN_S * 3)


async def _run(settings: MitmSettings, interceptor: Interceptor, started: threading.Event | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    proxy = MitmProxy(settings, CoreLink(interceptor))
    listening = await proxy.start()
    if started is not None:
        started.set()
    freeze_startup_objects()
    try:
        _announce(settings, listening, proxy)
        if proxy.ca is not None:
            print("\n".join(client_lines(settings, listening, proxy.ca)), file=sys.stderr, flush=True)
        await stop.wait()
        print("tap mitm: stopping…", file=sys.stderr, flush=True)
    finally:
        await proxy.stop()
        pending = {task for task in running_tasks() if task.get_name().startswith("capture-")}
        if pending:  # the last captures (tap.intercept.core names them)
            await asyncio.wait(pending, timeout=DRAIN_S)
