"""The lexical half of hybrid recall: an SQLite FTS5 index with BM25 ranking, plus the active records.

Local Chroma has no sparse index, so tap keeps this one beside it. Invariants: it holds exactly
the *active* memories (same ids, same scope as the store); the store writes both in step and
rebuilds this index from Chroma when their counts disagree (after a crash between the two writes,
or when several machines share one Chroma server).

The FTS5 table indexes each memory's scope as one key token (`scope_key`), so a search matches the
scope inside FTS5 and ranks only that scope's postings: its cost follows the scope, not the store.
Beside it, `entries` maps each id to its FTS5 rowid (replacing or removing a memory is an indexed
lookup), its scope, the encoded record the store hands back on the recall hot path (no Chroma read
there), and its vector as float16, from which the store loads a scope's vectors for exact
in-memory search (store.scope_vectors). Both tables change in one transaction; the schema changes
by numbered migrations (tap.sqlite.migrate).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import sqlite3
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from store import bm25
from store.bm25 import TermPostings, newest_ties
from tap.sqlite import Step, connect, exact_real, migrate, rows_at_once, transaction

log = logging.getLogger(__name__)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be been but by did do does for from had has have he her his how i if in into is "
    "it its me my of on or our she so that the their them then there these they this to was we were "
    "what when where which who whom why will with would you your".split()
)
_MAX_CANDIDATES = 64
MAX_TERMS = 16
POSTINGS_BUDGET = 20_000
LARGE_SCOPE_SHARE = 8
_RECORD_ROWS = msgspec.json.Decoder(list[tuple[str, msgspec.Raw]])  # (id, record) read in one step


_CLEAN_KEYS = "('clean_total', 'clean_embedder', 'clean_archived')"


@dataclass(frozen=True)
class CleanState:
    """What the store's only writer recorded at a clean close (LexicalIndex.clean_state): the
    collection's size (superseded versions included), the embedder of its vectors and how many
    current memories are archived (None when it did not say)."""

    total: int
    embedder: str
    archived: int | None


def query_terms(text: str, limit: int = _MAX_CANDIDATES) -> list[str]:
    """The distinct, lower-cased, non-stop-word terms of a query, in order (at most `limit`)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _STOP and word not in seen:
            seen[word] = None
            if len(seen) == limit:
                break
    return list(seen)


def informative(terms: Sequence[str], df: Sequence[int]) -> list[str]:
    """The terms worth a BM25 query, in their order: the rarest ones, at most MAX_TERMS, while the
    documents they match (their postings: what FTS5 reads and scores) stay within POSTINGS_BUDGET;
    the rarest term is always kept, terms matching nothing are left out (they cannot score). The
    terms left out are the commonest, whose IDF is the lowest (FTS5 gives a term in more than half
    of the documents ~1e-6), so the cost of a search follows the budget, not the store (an OR of
    every word of a question would read most of a large index's postings). Below POSTINGS_BUDGET
    memories in all nothing is left out but past the 16th term."""
    ranked = sorted((n, i) for i, n in enumerate(df) if n > 0)
    kept: list[int] = []
    postings = 0
    for n, i in ranked:
        if kept and (len(kept) == MAX_TERMS or postings + n > POSTINGS_BUDGET):
            break
        kept.append(i)
        postings += n
    return [terms[i] for i in sorted(kept)]


def scope_key(scope: str) -> str:
    """The one FTS5 token that stands for a scope (scope names hold characters FTS5 splits on)."""
    return "s" + hashlib.sha256(scope.encode("utf-8", "surrogatepass")).hexdigest()[:20]


IndexRow = tuple[str, str, str, bytes, bytes | None]
"""(id, scope, content, encoded record, vector as float16 bytes or None to keep the indexed one)
of one active memory."""


def _first_schema(db: sqlite3.Connection) -> None:
    """Migration 1: the index, its records and vectors, and the store's notes (`meta`). A file from
    before numbered migrations is brought to it: an index without scope keys (scopes were not
    searchable) is dropped, which the store rebuilds from Chroma (the counts no longer agree), and
    what the store noted about an index that is gone is forgotten; records without a vector column
    get one, filled as scopes are loaded."""
    columns = [row[1] for row in db.execute("PRAGMA table_info(memories)")]
    if columns and "scopekey" not in columns:
        db.execute("DROP TABLE memories")
        db.execute("DROP TABLE IF EXISTS entries")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS memories USING fts5(id UNINDEXED, scopekey, content, "
        "tokenize='porter unicode61')"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, fts_row INTEGER NOT NULL, scope TEXT NOT NULL, "
        "record BLOB NOT NULL, vector BLOB)"
    )
    db.execute("CREATE INDEX IF NOT EXISTS entries_scope ON entries (scope)")
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    if not {"memories", "entries"} <= tables:
        db.execute("DELETE FROM meta")
    if "vector" not in [row[1] for row in db.execute("PRAGMA table_info(entries)")]:
        db.execute("ALTER TABLE entries ADD COLUMN vector BLOB")


_MIGRATIONS: tuple[Step, ...] = (_first_schema,)
"""The index's tables (tap.sqlite.migrate: steps are appended, never edited)."""

_TEMP_SCHEMA = (
    # document frequencies of the index's (stemmed) terms: an indexed lookup per term
    "CREATE VIRTUAL TABLE temp.memories_vocab USING fts5vocab(main, memories, 'row')",
    # the query's words through the index's own tokenizer, so they are stemmed exactly as FTS5 does
    "CREATE VIRTUAL TABLE temp.query_words USING fts5(word, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE temp.query_words_vocab USING fts5vocab(temp, query_words, 'instance')",
    # the same words counted per text: how many of the texts written at once hold each term
    "CREATE VIRTUAL TABLE temp.query_words_rows USING fts5vocab(temp, query_words, 'row')",
)
_IN_BATCH = 500
FREQUENCY_CACHE_MAX = 50_000
"""Terms whose document frequency is kept in memory (then the cache starts over)."""
RECORDS_CACHE_MAX = 16_384
"""Records kept in memory by id, most recently read first out (records(): the same memories come
back search after search, and reading them from SQLite is a visible share of a recall)."""


@dataclass
class _Delta:
    """What one write transaction changes: memories per scope, texts indexed and texts dropped."""

    scopes: Counter[str] = field(default_factory=Counter)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # written or removed: their cached records go at the end
    rows: list[tuple[int, str]] = field(default_factory=list)  # (FTS5 rowid, scope) of each row written


@dataclass(frozen=True)
class Committed:
    """What one committed write of the index changed, told to its followers (`on_commit`): the ids
    written or removed, the FTS5 rows written (rowid, scope), the scopes touched, the terms whose
    document frequency moved; `cleared` when the whole index was emptied. Ids, rowids and stemmed
    terms only, never a memory's text. A follower (`LexicalIndex.follow`, another process's read
    view of the same file) reads everything else from the file, where the write is committed."""

    ids: tuple[str, ...] = ()
    rows: tuple[tuple[int, str], ...] = ()
    scopes: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    cleared: bool = False


Follower = Callable[[Committed], None]


class LexicalIndex:
    """FTS5 over active memories plus their records by id; thread-safe; one connection per index.

    The number of entries per scope is kept in memory (loaded at open, updated by every write of
    this instance; the data-dir lock makes it the only writer of its file). So are the document
    frequencies of the terms searched so far (`_frequencies`): counting a common term's postings in
    fts5vocab reads its whole doclist, so each term is counted once and then kept exact by the
    writes (the texts a write adds and removes are tokenized by FTS5 itself and their terms' counts
    moved: little next to embedding them, and nothing while no search has run). A scope
    that is a large share of the index is ranked from its terms' postings kept in memory
    (store.bm25), which the same term changes keep current; others by FTS5's bm25() in SQL.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only  # a read view of another process's index, kept current by `follow`
        self._followers: list[Follower] = []
        self._lock = threading.Lock()
        self._db = connect(path)
        # Reads that need no in-memory state (records, vectors, scope membership) go through a
        # connection per thread, without the lock: recall threads and writes do not queue behind
        # each other for them (WAL: a reader sees the last commit and never blocks).
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        if read_only:  # the writer made the schema; this view changes nothing but its temp tables
            for statement in _TEMP_SCHEMA:
                self._db.execute(statement)
        else:
            # a deleted memory's text is overwritten, not left in free pages
            self._db.execute("PRAGMA secure_delete=ON")
            migrate(self._db, "lexical", _MIGRATIONS)
            for statement in _TEMP_SCHEMA:
                self._db.execute(statement)
        self._counts: Counter[str] = Counter()
        self._load_counts()
        self._df: dict[str, int] = {}  # stemmed term -> memories holding it (only terms searched for)
        self._stems: dict[str, tuple[str, ...]] = {}  # query word -> its FTS5 terms (a pure function)
        self._records: OrderedDict[str, bytes] = OrderedDict()  # recently read records (see records())
        self._records_lock = threading.Lock()
        self._generation = 0  # bumped after every write transaction (under _records_lock): see records()
        self._postings = TermPostings(self._db, path, self._lock)  # of the terms searched so far (store.bm25)

    def _load_counts(self) -> None:
        rows = self._db.execute("SELECT scope, count(*) FROM entries GROUP BY scope").fetchall()
        self._counts = Counter({str(scope): int(n) for scope, n in rows})

    def upsert(self, rows: Iterable[IndexRow]) -> None:
        """Index (id, scope, content, record, vector) rows, replacing same-id rows (a row without
        a vector keeps the one indexed before, if any)."""
        rows = list(rows)
        if not rows:
            return
        with self._lock, self._transaction() as delta:
            for memory_id, scope, content, record, vector in rows:
                kept = self._delete(memory_id, delta)
                delta.added.append(content)
                cursor = self._db.execute(
                    "INSERT INTO memories (id, scopekey, content) VALUES (?, ?, ?)",
                    (memory_id, scope_key(scope), content),
                )
                self._postings.row_added(int(cursor.lastrowid or 0), scope)
                delta.rows.append((int(cursor.lastrowid or 0), scope))
                self._db.execute(
                    "INSERT INTO entries (id, fts_row, scope, record, vector) VALUES (?, ?, ?, ?, ?)",
                    (memory_id, cursor.lastrowid, scope, record, vector if vector is not None else kept),
                )
                delta.scopes[scope] += 1

    def vectors(self, scope: str) -> list[tuple[str, bytes | None]]:
        """(id, float16 vector bytes or None when not indexed yet) of every active memory of the
        scope, as of the last committed write (this thread's reader: loading a scope's vectors
        waits for no search or write, nor they for it)."""
        rows = self._reader().execute("SELECT id, vector FROM entries WHERE scope = ?", (scope,))
        return [(row[0], row[1]) for row in rows]

    def vectors_of(self, ids: Sequence[str]) -> dict[str, tuple[str, bytes | None]]:
        """(scope, float16 vector bytes or None) of each of these ids that is indexed (active)."""
        found: dict[str, tuple[str, bytes | None]] = {}
        reader = self._reader()
        for start in range(0, len(ids), _IN_BATCH):
            batch = list(ids[start : start + _IN_BATCH])
            marks = ",".join("?" * len(batch))
            for memory_id, scope, vector in reader.execute(
                f"SELECT id, scope, vector FROM entries WHERE id IN ({marks})", batch
            ):
                found[str(memory_id)] = (str(scope), None if vector is None else bytes(vector))
        return found

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection (opened on its first read, closed by close())."""
        reader: sqlite3.Connection | None = getattr(self._local, "reader", None)
        if reader is None:
            reader = connect(self.path)
            reader.execute("PRAGMA query_only=ON")
            reader.execute("PRAGMA cache_size=-1024")  # 1 MB per thread; the OS caches the file
            with self._readers_lock:
                self._readers.append(reader)
            self._local.reader = reader
        return reader

    def set_vectors(self, pairs: Sequence[tuple[str, bytes]]) -> None:
        """Store the vectors of indexed memories (read from the store for an index that lacked them)."""
        with self._lock, transaction(self._db, "DEFERRED"):
            self._db.executemany("UPDATE entries SET vector = ? WHERE id = ?", [(v, i) for i, v in pairs])

    def clean_total(self) -> int | None:
        """The collection's size recorded when its only writer closed cleanly (and since not
        reopened), else None."""
        state = self.clean_state()
        return state.total if state is not None else None

    def clean_state(self) -> CleanState | None:
        """What the only writer recorded when it closed cleanly (and nobody opened it to write
        since), else None: then this index is exactly the collection's active memories."""
        with self._lock:
            rows = dict(self._db.execute("SELECT key, value FROM meta WHERE key IN " + _CLEAN_KEYS).fetchall())
        if "clean_total" not in rows:
            return None
        archived = rows.get("clean_archived")
        return CleanState(
            int(rows["clean_total"]), rows.get("clean_embedder", ""), int(archived) if archived is not None else None
        )

    def set_clean_total(self, total: int | None, *, embedder: str = "", archived: int | None = None) -> None:
        """Record (at a clean close) or forget (at open, before any write) the collection's size,
        with the embedder its vectors come from and how many current memories are archived."""
        with self._lock, transaction(self._db, "DEFERRED"):
            self._db.execute("DELETE FROM meta WHERE key IN " + _CLEAN_KEYS)
            if total is None:
                return
            notes = {"clean_total": str(total), "clean_embedder": embedder}
            if archived is not None:
                notes["clean_archived"] = str(archived)
            self._db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", list(notes.items()))

    def all_records(self, scope: str | None = None) -> list[bytes]:
        """The records of every memory the index holds (of one scope, or of all), as stored."""
        reader = self._reader()
        if scope is None:
            return [bytes(row[0]) for row in reader.execute("SELECT record FROM entries")]
        return [bytes(row[0]) for row in reader.execute("SELECT record FROM entries WHERE scope = ?", (scope,))]

    def cursor(self) -> float | None:
        """Where this index stands in a shared store's change feed (store.changes), if it follows one."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'feed_cursor'").fetchone()
        return float(row[0]) if row else None

    def set_cursor(self, cursor: float | None) -> None:
        """Record (or, with None, forget) where this index stands in the change feed."""
        with self._lock:
            if cursor is None:
                self._db.execute("DELETE FROM meta WHERE key = 'feed_cursor'")
            else:
                self._db.execute(
                    "INSERT INTO meta (key, value) VALUES ('feed_cursor', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (repr(cursor),),
                )

    def scope_sizes(self) -> dict[str, int]:
        """Active memories per scope."""
        with self._lock:
            return dict(self._counts)

    def remove(self, ids: Sequence[str]) -> None:
        """Drop these ids from the index (superseded or deleted memories)."""
        if not ids:
            return
        with self._lock, self._transaction() as delta:
            for memory_id in ids:
                self._delete(memory_id, delta)

    def purge(self) -> None:
        """Merge the FTS5 segments (dropping the terms of deleted rows) and empty the write-ahead
        log, so nothing of a forgotten memory stays in the file (after `tap memories forget`)."""
        with self._lock:
            self._db.execute("INSERT INTO memories (memories) VALUES ('optimize')")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _keeps_terms(self) -> bool:
        """Whether anything is kept per term (then every write must name the terms it changes): here,
        or by a follower, whose own terms this index cannot see."""
        return bool(self._df) or self._postings.keeps_terms or bool(self._followers)

    def on_commit(self, follower: Follower) -> None:
        """Call `follower` with what each committed write changed (`Committed`), on the writing
        thread, before the write returns: a follower told of a removal before the caller of
        `remove` goes on never answers from the memory removed after that."""
        with self._lock:
            self._followers.append(follower)

    def _tell(self, committed: Committed) -> None:
        for follower in list(self._followers):
            try:
                follower(committed)
            except Exception:  # a follower that fails is its own problem (it starts over), never the write's
                log.exception("a follower of the lexical index failed")

    def follow(self, committed: Committed) -> None:
        """Bring this read view (`read_only`) up to a write another process committed to the same
        file: drop what it kept of the ids, terms and scopes the write touched and read them
        again as needed. Applying the same write twice, or one that this view read already, leaves
        it the same (the counts of touched scopes are read from the file, not added up)."""
        if committed.cleared:
            with self._lock:
                self._df.clear()
                self._postings.clear()
                self._load_counts()
            with self._records_lock:
                self._records.clear()
                self._generation += 1
            return
        with self._lock:
            self._postings.forget(committed.terms)
            for rowid, scope in committed.rows:
                self._postings.row_added(rowid, scope)
            for term in committed.terms:
                self._df.pop(term, None)
            for scope in committed.scopes:
                row = self._db.execute("SELECT count(*) FROM entries WHERE scope = ?", (scope,)).fetchone()
                if row and int(row[0]) > 0:
                    self._counts[scope] = int(row[0])
                else:
                    self._counts.pop(scope, None)
        with self._records_lock:
            for memory_id in committed.ids:
                self._records.pop(memory_id, None)
            self._generation += 1

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[_Delta]:
        """One write transaction; yields what it changes (per-scope counts, texts added and
        removed), applied to the in-memory counts and postings once committed (a failed write
        leaves the postings to be read again)."""
        if self.read_only:
            raise RuntimeError("a read view of the lexical index writes nothing")
        delta = _Delta()
        try:
            with transaction(self._db, "DEFERRED"):
                yield delta
                terms = self._term_changes(delta) if self._keeps_terms() else Counter()
        except BaseException:
            self._postings.clear()
            raise
        finally:  # committed or not: the records it wrote are read again, and none read meanwhile is kept
            with self._records_lock:
                for memory_id in delta.ids:
                    self._records.pop(memory_id, None)
                self._generation += 1
        self._postings.forget(terms)
        if self._followers:
            self._tell(Committed(tuple(delta.ids), tuple(delta.rows), tuple(delta.scopes), tuple(terms)))
        for scope, change in delta.scopes.items():
            self._counts[scope] += change
            if self._counts[scope] <= 0:
                del self._counts[scope]
        for term, change in terms.items():
            if term in self._df:
                self._df[term] += change

    def _term_changes(self, delta: _Delta) -> Counter[str]:
        """How the document frequency of each term the written texts hold changes."""
        change: Counter[str] = Counter()
        for texts, sign in ((delta.added, 1), (delta.removed, -1)):
            if not texts:
                continue
            self._db.execute("DELETE FROM temp.query_words")
            self._db.executemany("INSERT INTO temp.query_words (word) VALUES (?)", [(t,) for t in texts])
            for term, docs in self._db.execute("SELECT term, doc FROM temp.query_words_rows"):
                change[str(term)] += sign * int(docs)
        return change

    def _delete(self, memory_id: str, delta: _Delta) -> bytes | None:
        """Remove one id; its vector, if it had one. Every write of an id passes here first."""
        delta.ids.append(memory_id)
        row = self._db.execute("SELECT fts_row, scope, vector FROM entries WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            return None
        if self._keeps_terms():  # its terms' counts drop (read before the row goes)
            text = self._db.execute("SELECT content FROM memories WHERE rowid = ?", (row[0],)).fetchone()
            if text is not None:
                delta.removed.append(str(text[0]))
        self._db.execute("DELETE FROM memories WHERE rowid = ?", (row[0],))
        self._db.execute("DELETE FROM entries WHERE id = ?", (memory_id,))
        delta.scopes[row[1]] -= 1
        return None if row[2] is None else bytes(row[2])

    def search(self, query: str, *, scope: str, k: int, prefix: bool = False) -> list[tuple[str, float]]:
        """(id, score) pairs best first; score is -bm25, so higher is better. `prefix`: each term
        also matches the words it starts ('vim' finds 'vimrc')."""
        return self.search_many([query], scope=scope, k=k, prefix=prefix)[0]

    def search_many(
        self, queries: Sequence[str], *, scope: str, k: int, prefix: bool = False
    ) -> list[list[tuple[str, float]]]:
        """`search` for several queries of one scope (one lock for all of them), in their order."""
        candidates = [query_terms(query) for query in queries]
        with self._lock:
            if self._counts.get(scope, 0) == 0:
                return [[] for _ in queries]
            return [self._search(terms, scope, k, prefix) if terms else [] for terms in candidates]

    def _search(self, candidates: list[str], scope: str, k: int, prefix: bool = False) -> list[tuple[str, float]]:
        if prefix:  # word starts (reconcile's retraction lookup, off the hot path): every term, every row
            return self._ranked_by_fts5(candidates, scope, 0, k, prefix=True)
        df = self._frequencies(candidates)
        terms = informative(candidates, df)
        if not terms:
            return []
        first_row = self._newest_rows(min(n for t, n in zip(candidates, df, strict=True) if t in terms))
        stems = self._stemmed(terms)
        if any(len(found) != 1 for found in stems) or not self._large_scope(scope):
            return self._ranked_by_fts5(terms, scope, first_row, k)
        # one scope holds everything: filtering on it would only cost time
        scoped = None if len(self._counts) == 1 else scope
        best = self._postings.best([found[0] for found in stems], scope=scoped, first_row=first_row, k=k)
        if best is None:  # the row table is not read yet (it is being read in the background)
            return self._ranked_by_fts5(terms, scope, first_row, k)
        return self._with_ids(best, k)

    def postings_status(self) -> dict[str, int | bool]:
        """BM25 from kept postings (store.bm25): whether its row table is read, what it keeps, how
        many searches it answered."""
        with self._lock:
            return self._postings.status()

    def warm(self) -> None:
        """Start reading, in the background, what ranking from kept postings needs (store.bm25),
        when a scope is large enough to be ranked that way."""
        with self._lock:
            if any(self._large_scope(scope) for scope in self._counts):
                self._postings.warm()

    def _large_scope(self, scope: str) -> bool:
        """Whether the scope holds at least 1/LARGE_SCOPE_SHARE of the index: then its terms are
        ranked from their postings in memory (store.bm25), which hold every scope's rows; a
        smaller scope is ranked by FTS5, whose match on the scope key reads only that scope's
        postings (120 LongMemEval scopes in one index: reading each term's postings of every
        scope made the first search of a scope 10x slower than FTS5, with the first version of
        the reader)."""
        return self._counts[scope] * LARGE_SCOPE_SHARE >= sum(self._counts.values())

    def _ranked_by_fts5(
        self, terms: Sequence[str], scope: str, first_row: int, k: int, *, prefix: bool = False
    ) -> list[tuple[str, float]]:
        """The same ranking by FTS5's bm25() in SQL: for prefixes and phrases, and the reference
        store.bm25 is tested against."""
        star = "*" if prefix else ""
        words = " OR ".join('"' + t.replace('"', '""') + '"' + star for t in terms)
        # one scope holds everything: filtering on it would only cost time; else the scope's key
        # token is matched inside FTS5, so only the scope's postings are ranked
        match = (
            f"content : ({words})"
            if len(self._counts) == 1
            else f"scopekey : {scope_key(scope)} AND content : ({words})"
        )
        return self._best(match, first_row, k)

    def _best(self, match: str, first_row: int, k: int) -> list[tuple[str, float]]:
        """The k best (id, -bm25) of a MATCH, ties by id (the same hits whatever order the rows
        were written in; of many tying rows, the newest: store.bm25.TIE_ROWS_MAX). Ranked by rowid
        first: reading each matching row's `id` while ranking would cost as much as the ranking
        itself; the ids of the 2k best are read after,
        which holds the exact top k unless a tie runs past them (then the k best and the newest
        rows tying with the k-th are fetched again)."""
        ranked = self._ranked_rows(match, first_row, 2 * k)
        if len(ranked) == 2 * k and k > 0 and ranked[k - 1][1] == ranked[-1][1]:
            ranked = self._ranked_rows(match, first_row, k + bm25.TIE_ROWS_MAX, newest_ties_first=True)
        return self._with_ids([(rowid, -rank) for rowid, rank in ranked], k)

    def _ranked_rows(
        self, match: str, first_row: int, limit: int, *, newest_ties_first: bool = False
    ) -> list[tuple[int, float]]:
        """(rowid, bm25) of a MATCH's `limit` best rows, best (lowest) first; ties newest first
        when asked (else in no promised order). Read in one step (tap.sqlite.rows_at_once)."""
        order = "rank, rowid DESC" if newest_ties_first else "rank"
        rows = rows_at_once(
            self._db,
            f"rowid, {exact_real('rank')}",
            "SELECT rowid, bm25(memories, 0.0, 0.0, 1.0) AS rank FROM memories WHERE memories MATCH ? "
            f"AND rowid >= ? ORDER BY {order} LIMIT ?",
            (match, first_row, limit),
        )
        return sorted(((int(rowid), float(rank)) for rowid, rank in rows), key=lambda row: (row[1], -row[0]))

    def _with_ids(self, best: Sequence[tuple[int, float]], k: int) -> list[tuple[str, float]]:
        """(id, score) of the k best (rowid, score) pairs, ties by id (of many tying with the k-th,
        the newest: store.bm25.newest_ties)."""
        best = newest_ties(best, k)
        if not best:
            return []
        marks = ",".join("?" * len(best))
        rows = rows_at_once(
            self._db, "rowid, id", f"SELECT rowid, id FROM memories WHERE rowid IN ({marks})", [r for r, _ in best]
        )
        ids = {int(rowid): str(memory_id) for rowid, memory_id in rows}
        # a read view (`follow`) may rank a row another process removed a moment ago: it is skipped
        ranked = sorted((-score, ids[rowid]) for rowid, score in best if rowid in ids)[:k]
        return [(memory_id, -negated) for negated, memory_id in ranked]

    def _newest_rows(self, rarest: int) -> int:
        """The first rowid to search: 0 (all) unless even the rarest term kept is in more than
        POSTINGS_BUDGET memories; then only the newest rows that hold about that many of its
        postings (rowids grow with every write, so the newest memories win): a query of common
        words alone would otherwise read a huge doclist."""
        if rarest <= POSTINGS_BUDGET:
            return 0
        top = int(self._db.execute("SELECT max(rowid) FROM memories").fetchone()[0] or 0)
        return max(0, top - top * POSTINGS_BUDGET // rarest)

    def _frequencies(self, words: Sequence[str]) -> list[int]:
        """How many indexed memories hold each word (as FTS5 stems it; a word FTS5 splits in two
        counts as its rarer part); counted once per term, then kept (see the class docstring)."""
        stems = self._stemmed(words)
        if len(self._df) > FREQUENCY_CACHE_MAX:
            self._df.clear()
        for term in {t for found in stems for t in found if t not in self._df}:
            got = self._db.execute("SELECT doc FROM temp.memories_vocab WHERE term = ?", (term,)).fetchone()
            self._df[term] = int(got[0]) if got else 0
        return [min((self._df[t] for t in found), default=0) for found in stems]

    def _stemmed(self, words: Sequence[str]) -> list[tuple[str, ...]]:
        """Each word's terms as the index's tokenizer makes them (known words from memory)."""
        if len(self._stems) > FREQUENCY_CACHE_MAX:
            self._stems.clear()
        unknown = [w for w in dict.fromkeys(words) if w not in self._stems]
        if unknown:
            self._db.execute("DELETE FROM temp.query_words")
            self._db.executemany("INSERT INTO temp.query_words (rowid, word) VALUES (?, ?)", enumerate(unknown, 1))
            found: dict[int, list[str]] = {}
            for term, row in self._db.execute("SELECT term, doc FROM temp.query_words_vocab"):
                found.setdefault(int(row), []).append(str(term))
            for i, word in enumerate(unknown, 1):
                self._stems[word] = tuple(dict.fromkeys(found.get(i, [])))
        return [self._stems[w] for w in words]

    def in_scope(self, ids: Sequence[str], scope: str) -> set[str]:
        """Which of these ids are active memories of the scope."""
        found: set[str] = set()
        reader = self._reader()
        for start in range(0, len(ids), _IN_BATCH):
            batch = list(ids[start : start + _IN_BATCH])
            marks = ",".join("?" * len(batch))
            rows = rows_at_once(
                reader, "id", f"SELECT id FROM entries WHERE id IN ({marks}) AND +scope = ?", (*batch, scope)
            )
            found.update(row[0] for row in rows)
        return found

    def records(self, ids: Sequence[str]) -> dict[str, bytes]:
        """The stored records of these ids that are indexed (active), by id: through the cache of
        recently read ones, from which every write transaction drops the ids it wrote when it ends,
        else from this thread's reader; what a reader read is kept only when no write ended while
        it read (a record read before a commit must not outlive it). Read in one step
        (tap.sqlite.rows_at_once), each record as SQLite's json() gives it back (tap writes them
        compact, so byte for byte); a record that is not JSON makes its batch read row by row."""
        found: dict[str, bytes] = {}
        missing: list[str] = []
        with self._records_lock:
            for memory_id in ids:
                record = self._records.get(memory_id)
                if record is None:
                    missing.append(memory_id)
                else:
                    self._records.move_to_end(memory_id)
                    found[memory_id] = record
            generation = self._generation
        if not missing:
            return found
        read: dict[str, bytes] = {}
        reader = self._reader()
        for start in range(0, len(missing), _IN_BATCH):
            batch = missing[start : start + _IN_BATCH]
            marks = ",".join("?" * len(batch))
            query = f"SELECT id, record FROM entries WHERE id IN ({marks})"
            try:
                rows = rows_at_once(reader, "id, json(CAST(record AS TEXT))", query, batch, _RECORD_ROWS)
            except sqlite3.OperationalError:  # a record that is not JSON: read row by row, as stored
                rows = reader.execute(query, batch).fetchall()
            for memory_id, record in rows:
                read[memory_id] = bytes(record)
        found.update(read)
        with self._records_lock:
            if generation == self._generation:  # no write ended meanwhile: what was read is current
                self._records.update(read)
                while len(self._records) > RECORDS_CACHE_MAX:
                    self._records.popitem(last=False)
        return found

    def ids_in_scope(self, scope: str) -> list[str]:
        """Every active memory id of the scope."""
        with self._lock:
            return [row[0] for row in self._db.execute("SELECT id FROM entries WHERE scope = ?", (scope,))]

    def count(self, scope: str | None = None) -> int:
        """How many memories the index holds (of one scope, or in all)."""
        if scope is not None:
            return self._counts.get(scope, 0)  # one dict read: needs no lock (writes replace whole values)
        with self._lock:
            return sum(self._counts.values())

    def clear(self) -> None:
        """Empty the index (before a rebuild)."""
        with self._lock:
            with transaction(self._db, "DEFERRED"):
                self._db.execute("DELETE FROM memories")
                self._db.execute("DELETE FROM entries")
                self._db.execute("DELETE FROM meta")
            self._counts = Counter()
            with self._records_lock:
                self._records.clear()
                self._generation += 1
            self._df.clear()
            self._postings.clear()
            if self._followers:
                self._tell(Committed(cleared=True))

    def close(self) -> None:
        """Close the database."""
        self._postings.close()
        with self._readers_lock:
            for reader in self._readers:
                reader.close()
            self._readers.clear()
        with self._lock:
            self._db.close()
