"""Recall in a process of its own beside `tap serve`, so it has a core and an interpreter lock of its own.

Under load one `tap serve` process is bound by its one interpreter lock: the event loop relaying
64 streams and the recall worker want it at once, in bursts, and the time to first byte follows the
queue (bench/load.py, README "Load"). Here the recall worker of tap.recall.engine hands each recall to a
child process (a new interpreter, not a fork: the parent has threads) that searches the same store through a
read view of the lexical index file (store.replica): same ranking, same packing, same block.

Keeping the view current: every committed write of the lexical index is told to this class
(store.lexical.Committed: ids, rowids, scopes, stemmed terms; never text) and queued for the same
pipe as the recalls, in order, before the write returns. So a recall asked for after a write (a
forget included) is answered after the child caught up with it. While the child starts (or
restarts), writes are kept and sent once it is ready; applying one it had read already changes
nothing (LexicalIndex.follow). Neither end ever waits on the other (tap.wiring.recall_pipe: both
read all the time, messages are bounded, one writer thread sends with no lock held) and a
watchdog thread stops a child that answers nothing for STUCK_S.

What stays in `tap serve`: admission, deadlines and the lexical-only fallback (tap.recall.admission);
traced recalls (`tap why`); access counts (noted from each result); superseded versions (the child
asks for them over a second pipe, answered from the store); scopes the child cannot search exactly
in memory (store.replica.NotHere: that recall runs in `tap serve`); and every recall while the child
is not running. A child that dies is started again (with a growing pause), and meanwhile recall
runs in `tap serve` as it did before. Used with the embedded store on a machine of two or more
cores (`[recall] process`).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import Any

from store.lexical import Committed
from tap.config import Config
from tap.recall.engine import Ask
from tap.recall.why import RecallTrace
from tap.records import Memory
from tap.wiring.recall_child import Answer, ChildSettings
from tap.wiring.recall_pipe import Outbox, encoded, follow_message
from tap.wiring.runtime import Runtime

log = logging.getLogger(__name__)

STUCK_S = 10.0
"""A child that answers nothing for this long while recalls wait for it is stopped and started again."""
_RESTART_FIRST_S = 1.0
_RESTART_MAX_S = 60.0
_START_TIMEOUT_S = 120.0


class RecallProcess:
    """The parent's side: starts the child, hands it recalls and writes (see the module docstring)."""

    def __init__(
        self,
        settings: ChildSettings,
        versions: Callable[[Sequence[str]], list[Memory]],
        searchable: Callable[[str], bool] = lambda scope: True,
        env: dict[str, str] | None = None,
    ) -> None:
        self._settings = settings
        self._versions = versions
        self._searchable = searchable  # scopes the child can search (else it would only say NotHere)
        self._env = env  # the child's environment (None: this process's)
        self._state_lock = threading.Lock()  # never held across a send or a receive
        self._conn: Connection | None = None  # set while the child is ready
        self._outbox: Outbox | None = None  # set from the child's start to its end
        self._process: subprocess.Popen[bytes] | None = None
        self._pending: dict[int, Future[Answer | None]] = {}
        self._ids = itertools.count(1)
        self._closed = threading.Event()
        self._restart_s = _RESTART_FIRST_S
        self._quiet_since: float | None = None  # the first recall sent since the child last answered
        self.answered = 0
        self.not_here = 0
        self.starts = 0
        self.stuck = 0

    # -- life cycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the child in the background; recall runs in this process until it is ready."""
        threading.Thread(target=self._run, name="tap-recall-process", daemon=True).start()
        threading.Thread(target=self._watch, name="tap-recall-watchdog", daemon=True).start()

    def _run(self) -> None:
        """Start the child, serve it until it ends, start it again unless closed."""
        while not self._closed.is_set():
            began = time.monotonic()
            try:
                self._serve_one()
            except Exception:
                log.exception("the recall process failed")
            if self._closed.is_set():
                return
            if time.monotonic() - began > 10 * _RESTART_MAX_S:
                self._restart_s = _RESTART_FIRST_S  # it ran a good while: start again soon
            log.warning("the recall process ended; recall runs in tap serve, restarting in %.0f s", self._restart_s)
            if self._closed.wait(self._restart_s):
                return
            self._restart_s = min(_RESTART_MAX_S, self._restart_s * 2)

    def _serve_one(self) -> None:
        ours, theirs = socket.socketpair()
        ours_versions, theirs_versions = socket.socketpair()
        outbox = Outbox()
        with self._state_lock:
            self._outbox = outbox  # from before the child opens the file: nothing committed meanwhile is missed
        fds = (theirs.fileno(), theirs_versions.fileno())
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "tap.wiring.recall_child", *map(str, fds)],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                env=self._env,
                start_new_session=True,  # a terminal's Ctrl-C stops tap serve, which stops this
            )
        except BaseException:
            for end in (ours, theirs, ours_versions, theirs_versions):
                end.close()
            with self._state_lock:
                self._outbox = None
            outbox.close()
            raise
        self._process = process
        self.starts += 1
        theirs.close()
        theirs_versions.close()
        conn, versions = Connection(ours.detach()), Connection(ours_versions.detach())
        threading.Thread(target=self._serve_versions, args=(versions,), name="tap-recall-versions", daemon=True).start()
        try:
            conn.send(self._settings)
            if not conn.poll(_START_TIMEOUT_S) or conn.recv() != ("ready",):
                raise RuntimeError("the recall process did not get ready")
            threading.Thread(target=self._send_all, args=(conn, outbox), name="tap-recall-send", daemon=True).start()
            threading.Thread(target=self._read_all, args=(conn,), name="tap-recall-read", daemon=True).start()
            with self._state_lock:
                self._quiet_since = None
                self._conn = conn
            log.info("recall process %s ready", process.pid)
            process.wait()
        except (EOFError, OSError, RuntimeError) as exc:
            if not self._closed.is_set():
                log.debug("recall process connection ended: %s", exc)
        finally:
            with self._state_lock:
                self._conn = None
                self._outbox = None
                pending, self._pending = self._pending, {}
            outbox.close()
            for future in pending.values():
                future.set_result(None)  # run here, if there is time left
            _stop(process)
            conn.close()
            versions.close()

    def _send_all(self, conn: Connection, outbox: Outbox) -> None:
        """The writer: sends the outbox in order, holding no lock (the watchdog sees a send that
        does not end)."""
        while (data := outbox.take()) is not None:
            outbox.sending_since = time.monotonic()
            try:
                conn.send_bytes(data)
            except OSError:
                self._drop(conn)
                return
            finally:
                outbox.sending_since = None

    def _read_all(self, conn: Connection) -> None:
        """The reader: takes every answer as it comes (so the child never waits to send one) and
        hands it to the recall waiting for it; answers for recalls given up are dropped."""
        while True:
            try:
                kind, answered, result = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError, pickle.UnpicklingError, ValueError):
                self._drop(conn)
                return
            with self._state_lock:
                self._quiet_since = None
                waiting = self._pending.pop(answered, None) if kind == "result" else None
            if waiting is not None and not waiting.done():
                waiting.set_result(result)

    def _watch(self) -> None:
        """The watchdog, on a thread of its own: a child that answers nothing while recalls wait, or
        does not take a message, for STUCK_S is stopped (and started again)."""
        while not self._closed.wait(min(1.0, STUCK_S / 4)):
            now = time.monotonic()
            with self._state_lock:
                conn, outbox, quiet_since = self._conn, self._outbox, self._quiet_since
            if conn is None or outbox is None:
                continue
            quiet = quiet_since is not None and now - quiet_since > STUCK_S
            if quiet or outbox.stuck_for(now) > STUCK_S:
                self.stuck += 1
                log.warning("the recall process answered nothing for %.0f s; starting it again", STUCK_S)
                self._drop(conn)

    def _drop(self, conn: Connection) -> None:
        """The pipe to the child broke or the child is stuck: stop using it, and stop the child (it
        is started again)."""
        with self._state_lock:
            if self._conn is conn:
                self._conn = None
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()

    def _serve_versions(self, conn: Connection) -> None:
        """Answer the child's requests for superseded versions from the store."""
        try:
            while True:
                ids = conn.recv()
                try:
                    found = self._versions(ids)
                except Exception as exc:  # the store is down: the history lines go without them
                    log.debug("versions for the recall process: %s", exc)
                    found = []
                conn.send(found)
        except (EOFError, OSError):
            return

    def close(self) -> None:
        """Stop the child (recalls still waiting run here, if they have time)."""
        self._closed.set()
        with self._state_lock:
            outbox, self._conn = self._outbox, None
        if outbox is not None:
            outbox.put("stop", pickle.dumps(("stop",)))
        process = self._process
        if process is not None:
            _stop(process)

    # -- what tap serve hands over ------------------------------------------------------------------

    def follow(self, committed: Committed) -> None:
        """A write of the lexical index committed (store.lexical on_commit): the child catches up
        before any recall asked for after it. Queued, never sent here: the writer holds no lock."""
        with self._state_lock:
            outbox = self._outbox
        if outbox is not None:
            outbox.put("follow", follow_message(committed))

    def answer(self, ask: Ask, *, lexical_only: bool, deadline: float) -> Answer | None:
        """The child's result for one recall (tap.recall.engine.OffProcessRecall); None to run it
        here (no child ready, a scope it cannot search, a recall too large to send)."""
        if self._conn is None:  # starting, or gone (checked again below, under the lock)
            return None
        if not self._searchable(ask.scope):
            self.not_here += 1
            return None
        if ask.trace is not None:  # filled there, sent back (tap.recall.why.SentTrace)
            ask = dataclasses.replace(ask, trace=RecallTrace(ask.trace.skip_outcome))
        payload = encoded(ask)  # a skip rule that does not travel, or too large: run it here
        if payload is None:
            return None
        future: Future[Answer | None] = Future()
        with self._state_lock:
            conn, outbox = self._conn, self._outbox
            if conn is None or outbox is None:
                return None
            request = next(self._ids)
            self._pending[request] = future
            if self._quiet_since is None:
                self._quiet_since = time.monotonic()
        if not outbox.put("recall", pickle.dumps(("recall", request, payload, lexical_only, deadline))):
            with self._state_lock:
                self._pending.pop(request, None)
            return None
        try:
            result = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            with self._state_lock:
                self._pending.pop(request, None)
            raise TimeoutError("the recall process did not answer in time") from None
        if result is None:
            self.not_here += 1
        else:
            self.answered += 1
        return result

    def status(self) -> dict[str, Any]:
        """For /tap/status."""
        process = self._process
        outbox = self._outbox
        return {
            "ready": self._conn is not None,
            "pid": process.pid if process is not None and process.poll() is None else None,
            "answered": self.answered,
            "answered_here": self.not_here,
            "starts": self.starts,
            "stuck": self.stuck,
            "queued": len(outbox) if outbox is not None else 0,
        }


def start_recall_process(rt: Runtime) -> RecallProcess | None:
    """Start recall in a process of its own for `tap serve` when `[recall] process` is on, the store
    is the embedded one and the machine has a core to spare; None otherwise."""
    from store.chroma import ChromaStore

    config = rt.loaded.config
    if not config.recall.process or (os.cpu_count() or 1) < 2 or not isinstance(rt.store, ChromaStore):
        return None
    view = rt.store.read_view()
    if view is None:
        return None
    lexical_path, exact_scope_max, max_vectors = view
    process = RecallProcess(
        ChildSettings(lexical_path, config.embedder, config.recall, exact_scope_max, max_vectors),
        rt.store.get,
        rt.store.searched_in_memory,
        env=without_secrets(dict(os.environ), config),
    )
    rt.store.on_index_commit(process.follow)
    rt.recall.remote = process
    process.start()
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Wait a moment for the child to end (it ends when its pipe closes), then kill it."""
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def without_secrets(env: dict[str, str], config: Config) -> dict[str, str]:
    """The environment less every variable an `*_env` option names (API keys, bot tokens, the admin
    token): the recall process needs none of them."""
    named: set[str] = set()
    for section_name in config.__struct_fields__:
        section = getattr(config, section_name)
        for field in getattr(section, "__struct_fields__", ()):
            value = getattr(section, field)
            if field.endswith("_env") and isinstance(value, str) and value:
                named.add(value)
    return {key: value for key, value in env.items() if key not in named}
