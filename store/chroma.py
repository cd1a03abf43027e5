"""ChromaStore: every store port of tap.ports on Chroma (embedded PersistentClient or a Chroma server).

Invariants:
- vectors are always passed in (`embeddings=`/`query_embeddings=`); the collection has no
  embedding function, so Chroma never embeds (its default would download a model);
- the collection records the embedder id and dimensions it was built with; opening it with
  another embedder raises StoreError instead of mixing vectors;
- the lexical index (store.lexical) holds exactly the active memories, with their records;
- embedded mode holds an exclusive lock on the data dir (store.lock), so this process is the only
  writer and the lexical index is exact: searches read records from it; a scope of at most
  `exact_scope_max` active memories is searched exactly in memory (store.scope_vectors, loaded
  from the float16 vectors the lexical index keeps, ahead of need when a recall's lexical lookup
  reaches the scope, and for the largest scopes at start: `warm_vectors`), a larger one by asking
  Chroma for the nearest ids without a metadata filter (a `where` scans the metadata), over-
  fetching by the scope's share and falling back to the filtered query when too few survive. With
  a Chroma server (possibly shared with other machines) both read from Chroma, and other
  processes' writes are followed through a change feed (store.changes);
- a delete leaves no trace of the memory in the lexical index file;
- every chromadb/httpx error is translated into StoreError here.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import chromadb  # noqa: E402
import msgspec  # noqa: E402
import numpy as np  # noqa: E402
from chromadb.config import Settings  # noqa: E402

from store.changes import OVERLAP_S, RETAIN_S, ChangeFeed  # noqa: E402
from store.codec import from_metadata, to_metadata  # noqa: E402
from store.lexical import Follower, LexicalIndex  # noqa: E402
from store.lock import DataDirLock  # noqa: E402
from store.scope_vectors import EXACT_SCOPE_MAX, VECTOR_CACHE_BYTES, Preloader, ScopeVectors  # noqa: E402
from tap.errors import OutOfSpace, StoreError  # noqa: E402
from tap.ports import StoreStats  # noqa: E402
from tap.records import Hit, Memory  # noqa: E402
from tap.runtime.diskspace import SpaceWatch, out_of_space  # noqa: E402
from tap.runtime.priority import write_parts, yield_after  # noqa: E402
from tap.runtime.write_watch import WriteWatch  # noqa: E402

log = logging.getLogger(__name__)

_PAGE = 1000
DELETE_BATCH = 100  # deletes per call while requests are relayed (each holds the GIL: tap.runtime.priority)
FOLLOW_S = 1.0  # how often a process sharing a Chroma server reads the change feed
_PRUNE_EVERY_S = 300.0
_SAVE_CURSOR_EVERY_S = 10.0
_OVERFETCH = 2.0  # unfiltered vector query: fetch this many times the scope's expected share
_MAX_FAST_FETCH = 1000  # beyond this, the filtered Chroma query is the cheaper one
_FILE_CHECK_S = 0.5  # how often the database file's identity is checked (one stat)
_decode = msgspec.json.Decoder(Memory).decode
_encode = msgspec.json.Encoder().encode


def _listing_filter(
    scope: str | None, include_superseded: bool, excerpts: bool | None, archived: bool | None = None
) -> dict[str, Any] | None:
    """The Chroma `where` of a listing: one scope or all, current versions or every version, a
    layer or both, archived ones or not (`archived`: None both, True only them, False none; for
    every version without archived ones the caller filters: records from before archiving existed
    carry no `archived_at`, which a `where` on it would leave out)."""
    clauses: list[dict[str, Any]] = []
    if scope is not None:
        clauses.append({"scope": scope})
    if not include_superseded:
        clauses.append({"active": True} if archived is False else {"superseded_by": ""})
    if archived is True:
        clauses.append({"archived_at": {"$gt": 0}})
    if excerpts is not None:
        clauses.append({"kind": "episode"} if excerpts else {"kind": {"$ne": "episode"}})
    return None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}


@contextlib.contextmanager
def _translated(action: str, where: str) -> Iterator[None]:
    """Turn any Chroma/transport failure into a StoreError that says what failed where."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:  # chromadb raises many unrelated types (ValueError, httpx errors, ...)
        kind = OutOfSpace if out_of_space(exc) else StoreError
        raise kind(f"memory store {where}: {action} failed: {exc}") from exc


def _pack(vector: Sequence[float]) -> bytes:
    """A vector as float16 bytes (the lexical index keeps it for in-memory search)."""
    return np.asarray(vector, dtype=np.float16).tobytes()


def _dir_size(path: Path) -> int:
    """Bytes used by the files under path."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@functools.cache
def _settings_template() -> Settings:
    """Chroma's client settings, read once per process: building them reads every CHROMA_*
    variable through pydantic-settings, a large share of opening a store)."""
    return Settings(anonymized_telemetry=False, allow_reset=False)


def _client_settings() -> Settings:
    """A fresh copy for one client (a client writes its path into its settings)."""
    return _settings_template().model_copy()


class ChromaStore:
    """Memories in one Chroma collection plus an FTS5 lexical index beside it."""

    def __init__(
        self,
        *,
        data_dir: Path,
        url: str,
        collection: str,
        embedder_id: str,
        dimensions: int,
        exact_scope_max: int = EXACT_SCOPE_MAX,
        vector_cache_bytes: int = VECTOR_CACHE_BYTES,
        space: SpaceWatch | None = None,
    ) -> None:
        self.embedder_id = embedder_id
        # embedded: every write first makes sure the disk has room (a write meeting a full disk
        # never came back, holding the GIL: tap.runtime.diskspace)
        self.space = space if not url else None
        self.url = url
        self.where = url or str(data_dir / "chroma")
        self._data_dir = data_dir
        self._exclusive = not url  # embedded: this process is the only writer
        self._total: int | None = None  # cached collection size, reset by every write
        self._archived: int | None = None  # current archived memories, while known (store.read_view)
        # scopes' vectors for exact in-memory search (embedded mode only)
        self._small = ScopeVectors(max_scope=exact_scope_max, max_total=max(1, vector_cache_bytes // (4 * dimensions)))
        self._vector_load = threading.Lock()  # one scope's vectors loaded at a time (ahead and by a search)
        self._preloader = Preloader(self._load_when_kept)
        self._revisions: Counter[str] = Counter()  # per scope, bumped by every change seen (recall cache)
        self._epoch = 0  # bumped when the lexical index is rebuilt: every scope may have changed
        self._revision_lock = threading.Lock()
        self._feed: ChangeFeed | None = None  # a Chroma server is shared: follow the others' writes
        self._cursor = 0.0
        self._cursor_saved = 0.0
        self._follow_lock = threading.Lock()
        self._stop = threading.Event()
        self._follower: threading.Thread | None = None
        self._lock: DataDirLock | None = None
        if not url:
            self._lock = DataDirLock(data_dir)
            self._lock.acquire()
        self._writes = WriteWatch()  # writes under way, reported when one does not come back
        self._db_file: tuple[Path, tuple[int, int]] | None = None  # embedded: Chroma's database file
        self._db_checked_at = 0.0
        self._db_problem = ""
        try:
            self._client = self._connect(data_dir, url)
            self._col = self._open_collection(collection, embedder_id, dimensions)
            if not url:
                found = (data_dir / "chroma" / "chroma.sqlite3").stat()
                self._db_file = (data_dir / "chroma" / "chroma.sqlite3", (found.st_dev, found.st_ino))
            if url:
                with _translated("open the change feed", self.where):
                    self._feed = ChangeFeed(self._client, collection)
            self._lexical = LexicalIndex(data_dir / f"lexical-{collection}.db")
            self._sync_lexical()
        except BaseException:
            self._release_lock()
            raise
        if self._feed is not None:
            self._follower = threading.Thread(target=self._follow_loop, name="tap-store-follow", daemon=True)
            self._follower.start()

    def _connect(self, data_dir: Path, url: str) -> Any:
        settings = _client_settings()
        with _translated("connect", self.where):
            if not url:
                return chromadb.PersistentClient(path=str(data_dir / "chroma"), settings=settings)
            parts = urlsplit(url)
            client = chromadb.HttpClient(
                host=parts.hostname or "127.0.0.1",
                port=parts.port or (443 if parts.scheme == "https" else 8000),
                ssl=parts.scheme == "https",
                settings=settings,
            )
            client.heartbeat()
            return client

    def _open_collection(self, name: str, embedder_id: str, dimensions: int) -> Any:
        with _translated("open collection", self.where):
            col = self._client.get_or_create_collection(
                name,
                metadata={"hnsw:space": "cosine", "embedder": embedder_id, "dimensions": dimensions},
                embedding_function=None,
            )
        meta = col.metadata or {}
        if meta.get("embedder") != embedder_id or meta.get("dimensions") != dimensions:
            raise StoreError(
                f"the memory store at {self.where} (collection {name!r}) holds vectors from embedder "
                f"{meta.get('embedder')!r} ({meta.get('dimensions')} dims), but tap is configured with "
                f"{embedder_id!r} ({dimensions} dims). Refusing to mix vectors: set [embedder] back, or "
                "`tap memories export` with the old settings and import into a new data dir or collection"
            )
        return col

    def _sync_lexical(self) -> None:
        """Bring the lexical index in step with Chroma: embedded, rebuild it when the counts
        disagree (read only after a crash: a clean close records the collection's size, which
        grew linearly as a read of every active id at each start, seconds at 1M memories); on a
        shared server, catch up through the change feed when this index followed
        it recently, else rebuild it (equal counts prove nothing there)."""
        if self._feed is not None:
            cursor = self._lexical.cursor()
            if cursor is not None and cursor > time.time() - RETAIN_S + 2 * OVERLAP_S:
                self._cursor = self._cursor_saved = cursor
                self.follow()
                return
            started = time.time()
            self._rebuild()
            self._cursor = started
            self._save_cursor(force=True)
            return
        clean = self._lexical.clean_state()
        self._lexical.set_clean_total(None)  # until this process closes cleanly
        if clean is not None and clean.total == self._collection_size():
            self._archived = clean.archived  # known until the first write
            return  # the only writer closed cleanly and nothing wrote since: no need to read every id
        with _translated("read", self.where):
            active = self._col.get(where={"active": True}, include=[])["ids"]
        if len(active) != self._lexical.count():
            self._rebuild(active)

    def _rebuild(self, active: list[str] | None = None) -> None:
        """Index every active memory of the collection again."""
        if active is None:
            with _translated("read", self.where):
                active = self._col.get(where={"active": True}, include=[])["ids"]
        self._lexical.clear()
        self._changed_all()
        for start in range(0, len(active), _PAGE):
            memories = self.get(active[start : start + _PAGE])
            self._lexical.upsert((m.id, m.scope, m.index_text, _encode(m), None) for m in memories)

    def add(self, memories: Sequence[Memory], vectors: Sequence[Sequence[float]]) -> None:
        """Insert or replace memories with their vectors, and index the active ones."""
        if not memories:
            return
        if len(memories) != len(vectors):
            raise ValueError("one vector per memory")
        self._room("write")
        with _translated("write", self.where), self._writes.writing():
            self._col.upsert(
                ids=[m.id for m in memories],
                embeddings=[list(v) for v in vectors],
                documents=[m.content for m in memories],
                metadatas=[to_metadata(m) for m in memories],
            )
        self._index(memories, vectors)
        for memory, vector in zip(memories, vectors, strict=True):
            if memory.active:
                self._small.put(memory.scope, memory.id, vector)
            else:
                self._small.remove(memory.id)

    def update_metadata(self, memories: Sequence[Memory]) -> None:
        """Rewrite stored records of existing memories (content and vectors unchanged).

        Embedded Chroma holds the GIL for a whole write (a fixed cost plus a little a record): every
        other thread of the process waits, the event loop included, so background callers write
        in small batches (tap.runtime.priority.yield_after).

        No `documents=` here: Chroma would embed text passed without vectors (downloading a model).
        """
        if not memories:
            return
        self._room("update")
        with _translated("write", self.where), self._writes.writing():
            self._col.update(ids=[m.id for m in memories], metadatas=[to_metadata(m) for m in memories])
        self._index(memories)
        for memory in memories:
            if not memory.active:
                self._small.remove(memory.id)
            elif self._small.cached(memory.scope) and not self._small.holds(memory.scope, memory.id):
                self._small.drop(memory.scope)  # active again: its vector is not here, reload when searched

    def _room(self, what: str) -> None:
        """OutOfSpace (a StoreError) before a write the disk has no room for."""
        if self.space is not None:
            self.space.check(f"memory store {what}", self._data_dir / "chroma")

    def read_view(self) -> tuple[Path, int, int] | None:
        """Where another process can read this store's active memories (store.replica): the
        lexical index file, the largest scope searched exactly in memory, and how many vectors
        that cache holds; None with a Chroma server (vectors are searched there)."""
        if not self._exclusive:
            return None
        return self._lexical.path, self._small.max_scope, self._small.max_total

    def problem(self) -> str:
        """What is wrong with the store ("" when nothing): a write that has not returned for
        tap.runtime.write_watch.STUCK_S, or (embedded) its database file deleted or replaced while
        tap runs. Chroma then still reads the deleted file it holds open but can write nothing, and
        the lexical index would go on recalling memories the store no longer keeps: searches refuse
        (StoreError) and health says the store is down."""
        return self._writes.stuck() or self._gone()

    def _gone(self) -> str:
        """Why the embedded store's database file is not the one opened ("" when it is)."""
        if self._db_file is None:
            return ""
        now = time.monotonic()
        if now - self._db_checked_at < _FILE_CHECK_S:
            return self._db_problem
        self._db_checked_at = now
        try:
            found = os.stat(self._db_file[0])
            same = (found.st_dev, found.st_ino) == self._db_file[1]
        except OSError:
            same = False
        self._db_problem = (
            ""
            if same
            else (
                f"the memory store's database file {self._db_file[0].name} was deleted or replaced while tap ran: "
                "nothing can be stored or recalled until tap is restarted (restore the file first to keep its memories)"
            )
        )
        return self._db_problem

    def _intact(self) -> None:
        """StoreError when the store's files are gone (see `problem`)."""
        gone = self._gone()
        if gone:
            raise StoreError(gone)

    def searched_in_memory(self, scope: str) -> bool:
        """Whether the scope's vectors are searched exactly in memory (a recall process's read
        view can search them too; a larger scope is searched by Chroma). Never while the store's
        files are gone: the recall process's view would still find them."""
        if self._gone():
            return False
        in_scope = self._lexical.count(scope)
        return self._exclusive and (in_scope == 0 or self._kept_in_memory(in_scope))

    def on_index_commit(self, follower: Follower) -> None:
        """Call `follower` with what each committed write of the lexical index changed."""
        self._lexical.on_commit(follower)

    def revision(self, scope: str) -> int:
        """Changes whenever a memory of the scope was written, updated or deleted (see ports); -1
        while the store's files are gone (`problem`: no recall may reuse what it found before)."""
        if self._gone():
            return -1
        with self._revision_lock:
            return self._epoch + self._revisions[scope]

    def _changed(self, scopes: Iterable[str]) -> None:
        with self._revision_lock:
            for scope in set(scopes):
                self._revisions[scope] += 1

    def _changed_all(self) -> None:
        with self._revision_lock:
            self._epoch += 1

    def _index(self, memories: Sequence[Memory], vectors: Sequence[Sequence[float]] | None = None) -> None:
        self._changed(m.scope for m in memories)
        self._announce([(m.id, m.scope) for m in memories])
        self._total = self._archived = None
        packed: Sequence[bytes | None] = [_pack(v) for v in vectors] if vectors is not None else [None] * len(memories)
        self._lexical.upsert(
            (m.id, m.scope, m.index_text, _encode(m), v) for m, v in zip(memories, packed, strict=True) if m.active
        )
        self._lexical.remove([m.id for m in memories if not m.active])

    def get(self, ids: Sequence[str]) -> list[Memory]:
        """The memories with these ids that exist, in the order asked."""
        if not ids:
            return []
        with _translated("read", self.where):
            got = self._col.get(ids=list(ids), include=["metadatas", "documents"])
        found = {
            i: from_metadata(i, doc or "", meta or {})
            for i, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=False)
        }
        return [found[i] for i in ids if i in found]

    def get_active(self, ids: Sequence[str]) -> list[Memory]:
        """The active memories among these ids, from the lexical index's records (searches read
        the same ones), far cheaper than a Chroma read."""
        if not ids:
            return []
        self._intact()
        records = self._lexical.records(list(dict.fromkeys(ids)))
        return [_decode(records[i]) for i in ids if i in records]

    def active_ids(self, scope: str) -> list[str]:
        """Every active memory id of the scope, from the lexical index (which holds exactly those)."""
        return self._lexical.ids_in_scope(scope)

    def search_vectors(
        self, vectors: Sequence[Sequence[float]], *, scope: str, k: int, at_least: int | None = None
    ) -> list[list[Hit]]:
        """The nearest active memories of the scope for each vector (cosine similarity), all in one
        Chroma query (or from the scope's vectors in memory). With `at_least`, a query whose
        over-fetched window held fewer than k but at least that many of the scope's active
        memories returns those (still the exact nearest, in order) instead of asking Chroma again
        with a filter."""
        if not vectors:
            return []
        if not self._exclusive:
            return self._filtered_vector_search(vectors, scope=scope, k=k)
        self._intact()
        in_scope = self._lexical.count(scope)
        if in_scope == 0 or k <= 0:
            return [[] for _ in vectors]
        want = min(k, in_scope)
        if self._kept_in_memory(in_scope):
            exact = self._small_scope_search(vectors, scope=scope, k=want)
            if exact is not None:
                return exact
        total = self._collection_size()
        fetch = want if in_scope >= total else math.ceil(want * _OVERFETCH * total / in_scope)
        if fetch > max(_MAX_FAST_FETCH, want):
            return self._filtered_vector_search(vectors, scope=scope, k=k)
        fetch = min(fetch, total)
        with _translated("search", self.where):
            res = self._col.query(query_embeddings=[list(v) for v in vectors], n_results=fetch, include=["distances"])
        all_ids: list[list[str]] = res["ids"]
        all_dists: list[list[float]] = res["distances"] or [[] for _ in vectors]
        keep = self._lexical.in_scope(list({i for ids in all_ids for i in ids}), scope)
        chosen: list[list[tuple[str, float]]] = []
        short: list[int] = []  # queries whose fetch held too few of the scope: ask Chroma to filter
        for n, (ids, dists) in enumerate(zip(all_ids, all_dists, strict=True)):
            picked = [(i, float(d)) for i, d in zip(ids, dists, strict=False) if i in keep][:want]
            if len(picked) < min(want, k if at_least is None else at_least) and len(ids) < total:
                short.append(n)
            chosen.append(picked)
        records = self._lexical.records(list({i for picked in chosen for i, _ in picked}))
        out = [[Hit(memory=_decode(records[i]), score=1.0 - d) for i, d in picked if i in records] for picked in chosen]
        if short:
            refetched = self._filtered_vector_search([vectors[n] for n in short], scope=scope, k=k)
            for n, hits in zip(short, refetched, strict=True):
                out[n] = hits
        return out

    def _kept_in_memory(self, in_scope: int) -> bool:
        """Whether a scope of this size is searched from its vectors in memory (store.scope_vectors):
        within the bounds, also when it is the whole collection. Exact and cheaper than Chroma's
        index there too (no CPU on Chroma's threads, no over-fetch to filter)."""
        return 0 < in_scope <= self._small.max_scope

    def _load_when_kept(self, scope: str) -> None:
        """Load the scope's vectors into memory when its searches read them there and they are not
        there yet (the Preloader's load: a scope that is loaded already is not loaded again)."""
        if self._small.cached(scope) or not self._kept_in_memory(self._lexical.count(scope)):
            return
        with self._vector_load:
            if not self._small.cached(scope):
                self._load_scope(scope)

    def _small_scope_search(self, vectors: Sequence[Sequence[float]], *, scope: str, k: int) -> list[list[Hit]] | None:
        """Exact search over a scope's vectors held in memory (store.scope_vectors); None when
        they could not be cached (a write raced the load, or the scope is over the bounds)."""
        ranked = self._small.search(scope, vectors, k)
        if ranked is None:
            with self._vector_load:  # a load under way (Preloader) is waited for, not repeated
                ranked = self._small.search(scope, vectors, k)
                if ranked is None:
                    if not self._load_scope(scope):
                        return None
                    ranked = self._small.search(scope, vectors, k)
            if ranked is None:
                return None
        records = self._lexical.records(list({i for hits in ranked for i, _ in hits}))
        return [[Hit(memory=_decode(records[i]), score=s) for i, s in hits if i in records] for hits in ranked]

    def _load_scope(self, scope: str) -> bool:
        """Cache a scope's vectors: from the lexical index (float16 beside each record), the ones it
        lacks (an index from before that column) from Chroma, kept there for next time."""
        version = self._small.version
        rows = self._lexical.vectors(scope)
        if len(rows) > self._small.max_scope:
            return False
        missing = [i for i, v in rows if v is None]
        fetched: dict[str, bytes] = {}
        for start in range(0, len(missing), _PAGE):
            with _translated("read", self.where):
                got = self._col.get(ids=missing[start : start + _PAGE], include=["embeddings"])
            found = got["embeddings"] if got["embeddings"] is not None else []
            fetched.update((i, _pack(v)) for i, v in zip(got["ids"], found, strict=False))
        if fetched:
            self._lexical.set_vectors(list(fetched.items()))
        present = [(i, found) for i, v in rows if (found := v if v is not None else fetched.get(i)) is not None]
        return self._small.load_packed(scope, present, version=version)

    def warm_vectors(self) -> int:
        """Load the largest scopes' vectors that fit the cache (at start, in the background, so the
        first recall of a scope finds them), and start reading the lexical index's row table (its
        own background thread: store.bm25); returns how many scopes were loaded."""
        self._lexical.warm()
        if not self._exclusive:
            return 0
        room = self._small.max_total
        loaded = 0
        for scope, size in sorted(self._lexical.scope_sizes().items(), key=lambda pair: -pair[1]):
            if not self._kept_in_memory(size) or size > room:
                continue  # too big, or no room left
            with self._vector_load:
                ready = self._small.cached(scope) or self._load_scope(scope)
            if ready:
                loaded += 1
                room -= size
        return loaded

    def _count_archived(self, total: int) -> int:
        """Current memories that are archived (0 at once when every memory is active): what a read
        view of the index needs to know to list memories without Chroma (store.read_view)."""
        if total == self._lexical.count():
            return 0
        with _translated("count", self.where):
            got = self._col.get(where={"$and": [{"archived_at": {"$gt": 0}}, {"superseded_by": ""}]}, include=[])
        return len(got["ids"])

    def _collection_size(self) -> int:
        """Items in the collection (superseded versions included), cached until the next write."""
        if self._total is None:
            with _translated("count", self.where):
                self._total = int(self._col.count())
        return self._total

    def _filtered_vector_search(self, vectors: Sequence[Sequence[float]], *, scope: str, k: int) -> list[list[Hit]]:
        """The nearest active memories of the scope for each vector, filtered by Chroma itself."""
        with _translated("search", self.where):
            res = self._col.query(
                query_embeddings=[list(v) for v in vectors],
                n_results=k,
                where={"$and": [{"scope": scope}, {"active": True}]},
                include=["metadatas", "documents", "distances"],
            )
        out: list[list[Hit]] = []
        for n, ids in enumerate(res["ids"]):
            docs = (res["documents"] or [])[n] if res["documents"] else []
            metas = (res["metadatas"] or [])[n] if res["metadatas"] else []
            dists = (res["distances"] or [])[n] if res["distances"] else []
            out.append(
                [
                    Hit(memory=from_metadata(i, doc or "", meta or {}), score=1.0 - float(dist))
                    for i, doc, meta, dist in zip(ids, docs, metas, dists, strict=False)
                ]
            )
        return out

    def search_text(self, queries: Sequence[str], *, scope: str, k: int, prefix: bool = False) -> list[list[Hit]]:
        """The scope's active memories by BM25 for each query: one index lookup and one read of the
        records for all. A recall starts here while its query is embedded, so this is when the
        scope's vectors, if searched in memory and not loaded yet, start loading (Preloader)."""
        if not queries:
            return []
        self._intact()
        if self._exclusive and not self._small.cached(scope):
            self._preloader.start(scope)
        ranked = self._lexical.search_many(queries, scope=scope, k=k, prefix=prefix)
        ids = list({i for hits in ranked for i, _ in hits})
        if self._exclusive:
            records = self._lexical.records(ids)
            return [[Hit(memory=_decode(records[i]), score=s) for i, s in hits if i in records] for hits in ranked]
        by_id = {m.id: m for m in self.get(ids)}
        return [[Hit(memory=by_id[i], score=s) for i, s in hits if i in by_id and by_id[i].active] for hits in ranked]

    def active_in_slot(self, *, scope: str, slot: str) -> list[Memory]:
        """Active memories of the scope filling the slot (an indexed metadata filter in Chroma)."""
        if not slot:
            return []
        return self._all({"$and": [{"scope": scope}, {"slot": slot}, {"active": True}]})

    def in_conflict(self, *, scope: str | None) -> list[Memory]:
        """Active memories naming another in `conflicts_with` (records written before conflicts
        existed have no such key and match nothing)."""
        clauses: list[dict[str, Any]] = [{"active": True}, {"conflicts_with": {"$ne": "[]"}}]
        if scope is not None:
            clauses.append({"scope": scope})
        return [m for m in self._all({"$and": clauses}) if m.conflicts_with]

    def _all(self, where: dict[str, Any] | None) -> list[Memory]:
        out: list[Memory] = []
        offset = 0
        while True:
            with _translated("read", self.where):
                got = self._col.get(where=where, include=["metadatas", "documents"], limit=_PAGE, offset=offset)
            for i, doc, meta in zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=False):
                out.append(from_metadata(i, doc or "", meta or {}))
            if len(got["ids"]) < _PAGE:
                return out
            offset += _PAGE

    def list_memories(
        self,
        *,
        scope: str | None,
        limit: int,
        offset: int = 0,
        include_superseded: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> list[Memory]:
        """Memories newest first, optionally of one scope and one layer (statements or excerpts);
        `archived`: None lists archived and not archived alike, True only archived, False none."""
        where = _listing_filter(scope, include_superseded, excerpts, archived)
        memories = [m for m in self._all(where) if archived is not False or not m.archived]
        memories.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        return memories[offset : offset + limit]

    def count_memories(
        self,
        *,
        scope: str | None,
        include_superseded: bool = False,
        excerpts: bool | None = None,
        archived: bool | None = None,
    ) -> int:
        """How many memories `list_memories` pages through with the same filter (ids only are read,
        but for every version without archived ones)."""
        where = _listing_filter(scope, include_superseded, excerpts, archived)
        if include_superseded and archived is False:
            return sum(1 for m in self._all(where) if not m.archived)
        count, offset = 0, 0
        while True:
            with _translated("count", self.where):
                got = self._col.get(where=where, include=[], limit=_PAGE, offset=offset)
            count += len(got["ids"])
            if len(got["ids"]) < _PAGE:
                return count
            offset += _PAGE

    def scope_counts(self) -> dict[str, tuple[int, int]]:
        """Active memories per scope as (statements, excerpts), scopes sorted by name."""
        counts: dict[str, list[int]] = {}
        offset = 0
        while True:
            with _translated("count", self.where):
                got = self._col.get(where={"active": True}, include=["metadatas"], limit=_PAGE, offset=offset)
            for meta in got["metadatas"] or []:
                pair = counts.setdefault(str((meta or {}).get("scope", "")), [0, 0])
                pair[1 if (meta or {}).get("kind") == "episode" else 0] += 1
            if len(got["ids"]) < _PAGE:
                return {scope: (pair[0], pair[1]) for scope, pair in sorted(counts.items())}
            offset += _PAGE

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of these memories (those that exist), by id."""
        out: dict[str, list[float]] = {}
        for start in range(0, len(ids), _PAGE):
            with _translated("read", self.where):
                got = self._col.get(ids=list(ids[start : start + _PAGE]), include=["embeddings"])
            vectors = got["embeddings"] if got["embeddings"] is not None else []
            out.update((i, [float(x) for x in v]) for i, v in zip(got["ids"], vectors, strict=False))
        return out

    def inactive_search(self, vector: Sequence[float], *, scope: str, k: int) -> list[Hit]:
        """The scope's superseded and archived memories nearest to the vector (a filtered Chroma
        query: for explaining a recall afterwards, never on the hot path)."""
        with _translated("search", self.where):
            res = self._col.query(
                query_embeddings=[list(vector)],
                n_results=k,
                where={"$and": [{"scope": scope}, {"active": False}]},
                include=["metadatas", "documents", "distances"],
            )
        ids = res["ids"][0] if res["ids"] else []
        docs = (res["documents"] or [[]])[0]
        metas = (res["metadatas"] or [[]])[0]
        dists = (res["distances"] or [[]])[0]
        return [
            Hit(memory=from_metadata(i, doc or "", meta or {}), score=1.0 - float(dist))
            for i, doc, meta, dist in zip(ids, docs, metas, dists, strict=False)
        ]

    def iter_memories(self, *, scope: str | None = None) -> Iterator[Memory]:
        """Every memory including superseded versions, oldest first (export order)."""
        where = None if scope is None else {"scope": scope}
        yield from sorted(self._all(where), key=lambda m: (m.created_at, m.id))

    def delete(self, ids: Sequence[str]) -> int:
        """Remove memories for good (an id named twice counts once), and leave no trace of them in
        the lexical index file (LexicalIndex.purge: its segments merged, its write-ahead log emptied)."""
        found = self.get(list(dict.fromkeys(ids)))
        existing = [m.id for m in found]
        if existing:
            self._changed(m.scope for m in found)
            for part in write_parts(found, DELETE_BATCH):  # Chroma holds the GIL while it deletes
                began = time.perf_counter()
                gone = [m.id for m in part]
                self._room("delete")
                with _translated("delete", self.where), self._writes.writing():
                    self._col.delete(ids=gone)
                self._total = self._archived = None
                self._lexical.remove(gone)
                for memory_id in gone:
                    self._small.remove(memory_id)
                self._announce([(m.id, m.scope) for m in part])  # what is deleted is told, even if a later part fails
                yield_after(began)
            self._lexical.purge()
        return len(existing)

    # -- several processes on one Chroma server (store.changes) -------------------------------------

    def _announce(self, changed: list[tuple[str, str]]) -> None:
        if self._feed is not None and changed:
            with _translated("write the change feed", self.where):
                self._feed.announce(changed)

    def follow(self) -> int:
        """Apply the changes other processes announced since the last call (shared server only):
        their memories are read again, active ones indexed, the rest dropped; how many."""
        if self._feed is None:
            return 0
        with self._follow_lock:
            polled = time.time()
            with _translated("read the change feed", self.where):
                changes = self._feed.since(self._cursor)
            ids = list(dict.fromkeys(c.memory for c in changes if c.memory))
            current: dict[str, Memory] = {}
            for start in range(0, len(ids), _PAGE):
                current.update((m.id, m) for m in self.get(ids[start : start + _PAGE]))
            active = [m for m in current.values() if m.active]
            self._lexical.upsert((m.id, m.scope, m.index_text, _encode(m), None) for m in active)
            self._lexical.remove([i for i in ids if i not in current or not current[i].active])
            if changes:
                self._changed({c.scope for c in changes} | {m.scope for m in current.values()})
                self._total = None
            self._cursor = max([self._cursor, polled - OVERLAP_S, *(c.at for c in changes)])
            self._save_cursor()
            return len(ids)

    def status(self) -> dict[str, Any]:
        """For /tap/status: where the store is, what the lexical index holds, and on a shared
        server how far behind the others' changes this process may be (seconds)."""
        out: dict[str, Any] = {"shared": self._feed is not None, "indexed": self._lexical.count()}
        out["indexed_by_scope"] = dict(sorted(self._lexical.scope_sizes().items())[:50])
        out["bm25_in_memory"] = self._lexical.postings_status()
        if self._feed is not None:
            out["behind_s"] = round(max(0.0, time.time() - self._cursor - OVERLAP_S), 1)
        return out

    def _save_cursor(self, *, force: bool = False) -> None:
        if force or self._cursor - self._cursor_saved >= _SAVE_CURSOR_EVERY_S:
            self._lexical.set_cursor(self._cursor)
            self._cursor_saved = self._cursor

    def _follow_loop(self) -> None:
        """Every FOLLOW_S: follow the change feed; now and then prune it. Failures are logged."""
        pruned = 0.0
        failing = False
        while not self._stop.wait(FOLLOW_S):
            try:
                self.follow()
                if time.time() - pruned > _PRUNE_EVERY_S and self._feed is not None:
                    with _translated("prune the change feed", self.where):
                        self._feed.prune()
                    pruned = time.time()
                failing = False
            except Exception as exc:  # a store outage: keep trying, say so once
                if not failing:
                    log.warning("cannot follow the shared store's changes (will retry): %s", exc)
                failing = True

    def stats(self) -> StoreStats:
        """Counts by scope and kind (active memories) and bytes on disk."""
        everything = self._all(None)
        by_scope: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        archived = 0
        for m in everything:
            archived += m.current and m.archived
            if m.active:
                by_scope[m.scope] = by_scope.get(m.scope, 0) + 1
                by_kind[m.kind] = by_kind.get(m.kind, 0) + 1
        size = _dir_size(self._lexical.path)
        if not self.url:
            size += _dir_size(self._data_dir / "chroma")
        return StoreStats(
            total=len(everything),
            active=sum(by_scope.values()),
            archived=archived,
            by_scope=dict(sorted(by_scope.items())),
            by_kind=dict(sorted(by_kind.items())),
            size_bytes=size,
            location=self.where,
            embedder=self.embedder_id,
        )

    def close(self) -> None:
        """Stop following the change feed, close the lexical index and Chroma's client, and release
        the data-dir lock."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._preloader.close()
        if self._follower is not None:
            self._follower.join(timeout=10)
            with contextlib.suppress(StoreError):
                self._save_cursor(force=True)
        if self._exclusive:  # every write reached both: the next open need not compare them
            with contextlib.suppress(Exception):  # closing never fails (a broken index is compared at open)
                total = self._collection_size()
                archived = self._archived if self._archived is not None else self._count_archived(total)
                self._lexical.set_clean_total(total, embedder=self.embedder_id, archived=archived)
        self._lexical.close()
        # Chroma keeps one System per embedded path for the life of the process unless its last
        # client is closed: left open, its SQLite handle outlived the store, and a store opened
        # again at that path after the folder was removed and made anew failed its writes
        # ("attempt to write a readonly database").
        with contextlib.suppress(Exception):
            self._client.close()
        self._release_lock()

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None
