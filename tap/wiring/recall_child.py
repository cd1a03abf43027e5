"""The recall process itself (`python -m tap.wiring.recall_child FD FD`, started by
tap.wiring.recall_process): a read view of the store, the embedder and a RecallEngine, answering
the recalls `tap serve` sends and following its writes, one message at a time, in order.

It imports only what recall needs (not Chroma, not the web stack) and talks over two inherited
socket pairs, framed by multiprocessing's Connection: the first carries the settings, then writes
to follow and recalls to answer (and the answers back); on the second it asks `tap serve` for
superseded versions. It ends when `tap serve` closes the first pipe (or dies): it never outlives it.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from tap.config import EmbedderConfig, RecallConfig
from tap.recall.engine import Ask
from tap.recall.why import SentTrace
from tap.records import Memory, RecallResult
from tap.runtime.allocator import release_free_memory
from tap.wiring.recall_pipe import encoded

log = logging.getLogger(__name__)

Answer = tuple[RecallResult, SentTrace | None]
"""A recall's result and, for a traced recall, what its trace was told (tap.recall.why.SentTrace)."""


@dataclass(frozen=True)
class ChildSettings:
    """What the child needs to open the same view and recall the same way."""

    lexical_path: Path
    embedder: EmbedderConfig
    recall: RecallConfig
    exact_scope_max: int
    max_vectors: int


def serve(conn: Connection, versions: Connection) -> None:
    """Open the view, warm up, say ready, then answer recalls and follow writes in order."""
    from store.embedders import make_embedder
    from store.replica import NotHere, ReplicaStore
    from tap.recall.engine import RecallEngine

    settings: ChildSettings = conn.recv()
    versions_lock = threading.Lock()

    def older(ids: Sequence[str]) -> list[Memory]:
        with versions_lock:
            versions.send(list(ids))
            found: list[Memory] = versions.recv()
            return found

    store = ReplicaStore(
        settings.lexical_path,
        exact_scope_max=settings.exact_scope_max,
        max_vectors=settings.max_vectors,
        versions=older,
    )
    engine = RecallEngine(store, make_embedder(settings.embedder, queries_only=True), settings.recall, workers=1)
    try:
        store.warm()
        engine.search("warm up the embedder and the indexes", scope="tap-warm-up")
        release_free_memory(every_s=0)  # what loading the model and the vectors freed (tap.runtime.allocator)
        conn.send(("ready",))
        while True:
            message = conn.recv()
            if message[0] == "follow":
                store.follow(message[1])
            elif message[0] == "recall":
                _, request, payload, lexical_only, deadline = message
                answer: Answer | None = None
                if time.monotonic() <= deadline:  # else tap serve gave up on it (one clock: CLOCK_MONOTONIC)
                    try:
                        asked: Ask = pickle.loads(payload)
                        result = engine.answer(asked, lexical_only=lexical_only)
                        answer = (result, asked.trace.to_send() if asked.trace is not None else None)
                    except NotHere:
                        pass  # answered in tap serve
                    except Exception as exc:  # answered in tap serve, which meets the same failure or not
                        log.warning("recall in the recall process failed: %s", exc)
                conn.send_bytes(_answer(request, answer))
            else:
                return
    except (EOFError, OSError):
        return  # tap serve is gone
    finally:
        engine.close()
        store.close()


def _answer(request: int, answer: Answer | None) -> bytes:
    """The answer message, bounded: one too large to send comes back empty (tap serve runs that
    recall itself, tap.wiring.recall_pipe)."""
    return encoded(("result", request, answer)) or pickle.dumps(("result", request, None))


def main(argv: Sequence[str]) -> None:
    """Entry point: the two inherited descriptors."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops tap serve, which stops this
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s tap-recall: %(message)s")
    try:
        serve(Connection(int(argv[0])), Connection(int(argv[1])))
    except Exception:
        log.exception("the recall process failed")
        os._exit(1)
    os._exit(0)  # no interpreter teardown of the embedder's threads


if __name__ == "__main__":
    main(sys.argv[1:])
