"""Recall in a process of its own beside `tap serve`, so it has a core and an interpreter lock of its own.

Under load one `tap serve` process is bound by its one interpreter lock: the event loop relaying
64 streams and the recall worker want it at once, in bursts, and the time to first byte follows the
queue (bench/load.py, README "Load"). Here the recall worker of tap.recall.engine hands each recall to a
child process (a new interpreter, not a fork: the parent has threads) that searches the same store through a
read view of the lexical index file (store.replica): same ranking, same packing, same block.

Keeping the view current: every committed write of the lexical index is told to this class
(store.lexical.Committed: ids, rowids, scopes, stemmed terms; never text) and sent down the same
pipe as the recalls, in order, before the write returns. So a recall asked for after a write (a
forget included) is answered after the child caught up with it. While the child starts (or
restarts), writes are kept and sent once it is ready; applying one it had read already changes
nothing (LexicalIndex.follow).

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
        self._send_lock = threading.Lock()  # one message at a time, writes and recalls in one order
        self._recv_lock = threading.Lock()  # one recall reads the answers at a time (_wait)
        self._state_lock = threading.Lock()
        self._conn: Connection | None = None  # set while the child is ready
        self._process: subprocess.Popen[bytes] | None = None
        self._pending: dict[int, Future[Answer | None]] = {}
        self._held: list[Committed] | None = None  # writes kept while a child starts
        self._ids = itertools.count(1)
        self._closed = threading.Event()
        self._restart_s = _RESTART_FIRST_S
        self._quiet_since: float | None = None  # the first recall sent since the child last answered
        self.answered = 0
        self.not_here = 0
        self.starts = 0

    # -- life cycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the child in the background; recall runs in this process until it is ready."""
        threading.Thread(target=self._run, name="tap-recall-process", daemon=True).start()

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
        with self._state_lock:
            self._held = []  # from before the child opens the file: nothing committed meanwhile is missed
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
                self._held = None
            raise
        self._process = process
        self.starts += 1
        theirs.close()
        theirs_versions.close()
        conn, versions = Connection(ours.detach()), Connection(ours_versions.detach())
        server = threading.Thread(
            target=self._serve_versions, args=(versions,), name="tap-recall-versions", daemon=True
        )
        server.start()
        try:
            conn.send(self._settings)
            if not conn.poll(_START_TIMEOUT_S) or conn.recv() != ("ready",):
                raise RuntimeError("the recall process did not get ready")
            with self._send_lock, self._state_lock:
                for committed in self._held or []:
                    conn.send(("follow", committed))
                self._held = None
                self._conn = conn
            log.info("recall process %s ready", process.pid)
            process.wait()  # answers are read by the recalls that wait for them (_wait)
        except (EOFError, OSError, RuntimeError) as exc:
            if not self._closed.is_set():
                log.debug("recall process connection ended: %s", exc)
        finally:
            with self._send_lock, self._state_lock:
                self._conn = None
                self._held = None
                pending, self._pending = self._pending, {}
            for future in pending.values():
                future.set_result(None)  # run here, if there is time left
            with self._recv_lock:  # a recall reading the pipe gives it up by its deadline
                conn.close()
            versions.close()
            _stop(process)

    def _wait(self, conn: Connection, request: int, future: Future[Answer | None], deadline: float) -> Answer | None:
        """Wait for one recall's answer, reading the pipe on this thread (one hand-off fewer than a
        reader thread: under load each hand-off waits for the interpreter lock, and the time per
        recall is what admission plans with); answers for other recalls go to their futures, those
        for recalls given up are dropped."""
        while not future.done():
            left = deadline - time.monotonic()
            if left <= 0 or not self._recv_lock.acquire(timeout=left):
                break
            try:
                if not future.done() and conn.poll(max(0.0, deadline - time.monotonic())):
                    kind, answered, result = conn.recv()
                    self._quiet_since = None
                    with self._state_lock:
                        waiting = self._pending.pop(answered, None) if kind == "result" else None
                    if waiting is not None:
                        waiting.set_result(result)
            except (EOFError, OSError):  # the child is gone: run it here
                self._drop(conn)
                with self._state_lock:
                    self._pending.pop(request, None)
                return None
            finally:
                self._recv_lock.release()
        if future.done():
            return future.result()
        with self._state_lock:
            self._pending.pop(request, None)
        quiet_since = self._quiet_since
        if quiet_since is not None and time.monotonic() - quiet_since > STUCK_S:
            log.warning("the recall process answered nothing for %.0f s; starting it again", STUCK_S)
            self._drop(conn)
        raise TimeoutError("the recall process did not answer in time")

    def _drop(self, conn: Connection) -> None:
        """The pipe to the child broke: stop using it, and stop the child (it is started again)."""
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
        with self._send_lock, self._state_lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.send(("stop",))
            except OSError:
                pass
        process = self._process
        if process is not None:
            _stop(process)

    # -- what tap serve hands over ------------------------------------------------------------------

    def follow(self, committed: Committed) -> None:
        """A write of the lexical index committed (store.lexical on_commit): the child catches up
        before any recall asked for after it."""
        with self._send_lock, self._state_lock:
            if self._held is not None:
                self._held.append(committed)
            conn = self._conn
            if conn is None:
                return
            try:
                conn.send(("follow", committed))
            except OSError:
                self._conn = None
                process = self._process
                if process is not None:
                    process.kill()  # started again, reading the file afresh

    def answer(self, ask: Ask, *, lexical_only: bool, deadline: float) -> Answer | None:
        """The child's result for one recall (tap.recall.engine.OffProcessRecall)."""
        if self._conn is None:  # starting, or gone (checked again below, under the lock)
            return None
        if not self._searchable(ask.scope):
            self.not_here += 1
            return None
        if ask.trace is not None:  # filled there, sent back (tap.recall.why.SentTrace)
            ask = dataclasses.replace(ask, trace=RecallTrace(ask.trace.skip_outcome))
        try:
            message = pickle.dumps(ask, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return None  # a skip rule that does not travel: run it here
        future: Future[Answer | None] = Future()
        with self._send_lock:
            with self._state_lock:
                conn = self._conn
                if conn is None:
                    return None
                request = next(self._ids)
                if self._quiet_since is None:
                    self._quiet_since = time.monotonic()
                self._pending[request] = future
            try:
                conn.send(("recall", request, message, lexical_only, deadline))
            except OSError:
                with self._state_lock:
                    self._pending.pop(request, None)
                self._drop(conn)
                return None
        result = self._wait(conn, request, future, deadline)
        if result is None:
            self.not_here += 1
        else:
            self.answered += 1
        return result

    def status(self) -> dict[str, Any]:
        """For /tap/status."""
        process = self._process
        return {
            "ready": self._conn is not None,
            "pid": process.pid if process is not None and process.poll() is None else None,
            "answered": self.answered,
            "answered_here": self.not_here,
            "starts": self.starts,
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
