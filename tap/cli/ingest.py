"""`tap ingest PATH… [--format F] [--scope S] [--follow] [--json]`: chat logs on disk → memories.

PATH may be files, directories (walked recursively for *.jsonl, *.ndjson, *.txt, *.log) or globs.
Reading is incremental and exactly once (bridges.logtail: offsets in `<data dir>/logtail.db`), so
running the command again only adds what was appended since.

Where the events go: to a running `tap serve` through `POST /tap/ingest` (one request per
conversation batch; the server's worker extracts), else to the local runtime, whose extraction
worker is then drained so the memories exist when the command returns. With `--follow` the
command keeps polling (`[logtail] poll_s`) until Ctrl-C, extracting periodically when local.
When the server it sends to stops answering (a restart), `--follow` says so once, waits for a
server on the data dir with a growing pause (WAIT_FIRST_S doubling up to WAIT_MAX_S) and goes on
where reading stopped: the offsets move only once the server accepted the lines, and the turns it
already had are dropped by turn id, so nothing is lost and nothing is queued twice. A server that
answers and still refuses the lines ends the command as before (exit 1).

Output: a rich progress bar on stderr when it is a terminal (never with `--json`); warnings for
broken lines name file and line, and a warning for each file that is not a chat log tap recognises
(with how to read it anyway); a summary at the end (a JSON object with `--json`). Exit code 1
when a path or file could not be read (the rest is still ingested), else 0.

rich's progress bar, the tailer and the runtime are imported when the command runs, not when the
CLI starts (every `tap` command imports this module for its option list).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import click

from bridges.logtail.formats import FORMATS
from tap.admin_token import ServerInfo, ensure_token, read_server_info
from tap.cli.options import config_type
from tap.cli.shared import emit_json, state
from tap.config import LoadedConfig, LogtailConfig
from tap.errors import StoreError
from tap.plural import plural

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from bridges.logtail import Choice, Sink, Tailer, TailStats
    from tap.records import IngestEvent
    from tap.wiring.runtime import Runtime

MAX_WARNINGS = 20
WRITTEN = ("add", "update", "supersede", "episode")
WAIT_FIRST_S = 0.5
WAIT_MAX_S = 10.0


class Ui:
    """Progress bar and messages on stderr; silent bar when quiet (JSON or not a terminal)."""

    def __init__(self, *, quiet: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True)
        self.progress: Progress | None = None
        self.warnings = 0
        if not quiet and sys.stderr.isatty():
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                console=self.console,
            )

    @contextlib.contextmanager
    def live(self) -> Iterator[None]:
        """Show the bar while the block runs."""
        if self.progress is None:
            yield
            return
        with self.progress:
            yield

    def task(self, description: str, total: float | None) -> TaskID | None:
        """A new bar line (None when there is no bar)."""
        if self.progress is None:
            return None
        return self.progress.add_task(description, total=total, detail="")

    def update(self, task: TaskID | None, **fields: Any) -> None:
        """Move a bar line."""
        if self.progress is not None and task is not None:
            self.progress.update(task, **fields)

    def say(self, text: str) -> None:
        """A line on stderr (above the bar when there is one)."""
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def warn(self, text: str) -> None:
        """A warning, at most MAX_WARNINGS of them (the summary counts the rest)."""
        self.warnings += 1
        if self.warnings <= MAX_WARNINGS:
            self.say(f"tap: warning: {text}")
        elif self.warnings == MAX_WARNINGS + 1:
            self.say("tap: warning: more warnings follow; see the summary for the counts")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _detail(stats: TailStats) -> str:
    return f"{plural(stats.lines, 'line')} · {plural(stats.turns, 'turn')} queued"


def _local_sink(rt: Runtime) -> Callable[[Sequence[IngestEvent]], int]:
    return lambda events: sum(rt.ingestor.ingest(event) for event in events)


def _written(rt: Runtime) -> dict[str, int]:
    return {action: rt.worker.extraction.counters[action] for action in WRITTEN}


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=config_type(LogtailConfig, "format"),
    default=None,
    help="Log format (default: [logtail] format).",
)
@click.option("--scope", default=None, help="Scope for every memory (default: per project / per file).")
@click.option("--follow", is_flag=True, help="Keep following the paths (new lines, new files) until Ctrl-C.")
@click.option("--json", "as_json", is_flag=True, help="No progress bar; print a JSON summary at the end.")
def ingest(paths: tuple[str, ...], fmt: str | None, scope: str | None, follow: bool, as_json: bool) -> None:
    """Ingest chat logs (Claude Code transcripts, JSONL, plain text) into memories, exactly once."""
    loaded = state().load()
    ui = Ui(quiet=as_json)
    with _session(loaded, ui, paths, fmt, scope) as session:
        with ui.live():
            if follow:
                session.follow(loaded.config.logtail.poll_s)
            else:
                session.once()
        summary = session.summary()
    _report(summary, ui, as_json=as_json)
    if summary["errors"]:
        raise SystemExit(1)


@dataclass(frozen=True)
class Reached:
    """A server that answered, and a sink that sends to it."""

    server: ServerInfo
    sink: Sink


class Session:
    """One `tap ingest` run: a tailer, a sink (local runtime or server) and the UI. In server mode
    `served_by` is the server the sink sends to and `reconnect` finds the one on the data dir now,
    if it answers."""

    def __init__(
        self,
        tailer: Tailer,
        ui: Ui,
        rt: Runtime | None,
        server: str | None,
        served_by: ServerInfo | None = None,
        reconnect: Callable[[], Reached | None] | None = None,
    ) -> None:
        self.tailer = tailer
        self.ui = ui
        self.rt = rt
        self.server = server
        self.served_by = served_by
        self.reconnect = reconnect
        self.chunks = 0
        self._start = _written(rt) if rt is not None else {}
        self._bar: TaskID | None = None
        self._extract_bar: TaskID | None = None

    def progress(self, stats: TailStats) -> None:
        """Move the reading bar."""
        self.ui.update(self._bar, completed=len(stats.files), detail=_detail(stats))

    def extract(self, *, flush: bool) -> None:
        """Chunk and extract what is queued locally (every window when `flush`, idle ones otherwise)."""
        rt = self.rt
        if rt is None:
            return
        rt.queue.flush(idle_s=0.0 if flush else rt.loaded.config.extract.flush_after_s)
        if self._extract_bar is None:
            self._extract_bar = self.ui.task("extracting memories", None)
        done_before = self.chunks
        self.chunks += rt.worker.drain(
            flush=False, on_progress=lambda n: self.ui.update(self._extract_bar, completed=done_before + n)
        )

    def once(self) -> None:
        """Read every file once, then extract (local)."""
        files = self.tailer.discover()
        self._bar = self.ui.task("reading logs", len(files))
        for path in files:
            self.tailer.read_file(path, one_shot=True)
        self.tailer.forget_gone()
        self.progress(self.tailer.stats)
        self.extract(flush=True)

    def follow(self, poll_s: float) -> None:
        """Poll until Ctrl-C; extract idle conversations as they settle (local); then finish."""
        self._bar = self.ui.task("following logs (files)", None)
        self.ui.say(f"tap: following {', '.join(self.tailer.roots)} (Ctrl-C to stop)")
        previous = signal.signal(signal.SIGTERM, _interrupt)  # a service manager stops it like Ctrl-C
        try:
            while True:
                try:
                    self.tailer.poll()
                except StoreError as exc:
                    self.wait_for_server(exc)
                    continue
                self.progress(self.tailer.stats)
                self.extract(flush=False)
                time.sleep(poll_s)
        except KeyboardInterrupt:
            self.ui.say("tap: stopping; extracting what was read (Ctrl-C again to leave it queued)")
            if self.rt is not None:  # a chunk cut short by Ctrl-C mid-extraction goes again, now
                self.rt.queue.release_running()
        finally:
            signal.signal(signal.SIGTERM, previous)
        with contextlib.suppress(KeyboardInterrupt):
            self.extract(flush=True)

    def wait_for_server(self, failure: StoreError) -> None:
        """After a failed hand-over to the server: re-raise if a server answers on the data dir at
        the same address (it refused the lines), else say so once and wait, with a growing pause,
        until one answers; then hand the tailer a sink to it (see the module docstring)."""
        if self.reconnect is None:
            raise failure
        found = self.reconnect()
        if found is not None and found.server == self.served_by:
            raise failure  # the same server answers: it refused the lines
        if found is None:
            self.ui.say(
                f"tap: tap serve at {self.server} is not answering ({failure}); waiting for it to come back "
                "(Ctrl-C to stop); nothing read is lost"
            )
        pause = WAIT_FIRST_S
        while found is None:
            time.sleep(pause)
            pause = min(pause * 2, WAIT_MAX_S)
            found = self.reconnect()
        self.served_by, self.server, self.tailer.sink = found.server, found.server.url, found.sink
        self.ui.say(f"tap: tap serve answers at {self.server}; going on where reading stopped")

    def summary(self) -> dict[str, Any]:
        """The end-of-run summary document."""
        stats = self.tailer.stats
        formats: dict[str, int] = {}
        for fmt in stats.formats.values():
            if fmt in FORMATS:  # files that are no chat log are listed under not_chat_logs
                formats[fmt] = formats.get(fmt, 0) + 1
        written: dict[str, int] | None = None
        if self.rt is not None:
            now = _written(self.rt)
            written = {k: now[k] - self._start.get(k, 0) for k in WRITTEN}
        return {
            "server": self.server,
            "files": len(stats.files),
            "formats": formats,
            "lines": stats.lines,
            "messages": stats.messages,
            "turns": stats.turns,
            "skipped": dict(stats.skipped),
            "skipped_lines": [{"path": s.path, "line": s.line, "reason": s.reason} for s in stats.skipped_lines],
            "not_chat_logs": sorted(stats.unrecognised),
            "waiting": sorted(stats.waiting),
            "errors": [{"path": p, "error": e} for p, e in sorted(stats.errors.items())],
            "forgotten": stats.files_forgotten,
            "chunks": self.chunks if self.rt is not None else None,
            "memories_written": sum(written.values()) if written is not None else None,
            "memories": written,
        }


@contextlib.contextmanager
def _session(
    loaded: LoadedConfig, ui: Ui, paths: Sequence[str], fmt: str | None, scope: str | None
) -> Iterator[Session]:
    """Open the offset store and the sink (server if one runs, else the local runtime)."""
    from bridges.logtail import OffsetStore, Tailer
    from bridges.logtail.follow import STATE_FILE
    from tap.cli.admin_client import INGEST_TIMEOUT_S, AdminClient
    from tap.wiring.runtime import open_runtime

    config = loaded.config.logtail
    info = read_server_info(loaded.data_dir)
    store = OffsetStore(loaded.data_dir / STATE_FILE)
    rt: Runtime | None = None
    reconnect: Callable[[], Reached | None] | None = None
    try:
        if info is not None:

            def reconnect() -> Reached | None:
                """The server on the data dir now, if it answers (it may have restarted on another port)."""
                now = read_server_info(loaded.data_dir)
                if now is None or not answers(now.url):
                    return None
                token = ensure_token(loaded.data_dir, loaded.config.admin.token_env)
                return Reached(now, AdminClient(now.url, token, timeout=INGEST_TIMEOUT_S).ingest)

            remote = AdminClient(
                info.url, ensure_token(loaded.data_dir, loaded.config.admin.token_env), timeout=INGEST_TIMEOUT_S
            )
            sink: Callable[[Sequence[IngestEvent]], int] = remote.ingest
        else:
            rt = open_runtime(loaded, warm_recall=False)  # a backfill recalls nothing
            sink = _local_sink(rt)
        tailer = Tailer(
            paths,
            store,
            sink,
            fmt=_choice(fmt or config.format),
            scope=config.scope if scope is None else scope,
            on_warning=ui.warn,
            on_error=lambda path, reason: ui.say(f"tap: cannot read {path}: {reason}"),
        )
        session = Session(tailer, ui, rt, info.url if info is not None else None, info, reconnect)
        tailer.on_progress = session.progress
        yield session
    finally:
        store.close()
        if rt is not None:
            rt.close()


def answers(url: str) -> bool:
    """Whether a tap serve answers `GET /tap/health` at this URL (within 2 s)."""
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/tap/health", timeout=2.0) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _choice(fmt: str) -> Choice:
    if fmt not in FORMATS:
        raise click.BadParameter(f"unknown format {fmt!r}", param_hint="--format")
    return cast("Choice", fmt)


def _report(summary: dict[str, Any], ui: Ui, *, as_json: bool) -> None:
    """Print the summary: JSON on stdout, or a few readable lines."""
    if as_json:
        emit_json(summary)
        return
    click.echo(render_summary(summary))


def render_summary(doc: dict[str, Any]) -> str:
    """The human-readable end summary."""
    formats = ", ".join(f"{fmt} {n}" for fmt, n in sorted(doc["formats"].items()))
    lines = [
        f"files: {doc['files']}" + (f" ({formats})" if formats else ""),
        f"lines read: {doc['lines']:,} · messages: {doc['messages']:,} · new turns queued: {doc['turns']:,}",
    ]
    skipped = doc["skipped"]
    if skipped:
        reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(skipped.items()))
        lines.append(f"skipped lines: {sum(skipped.values())} ({reasons})")
    for path in doc["not_chat_logs"]:
        lines.append(f"not a chat log (skipped; looked at again when it grows, or give --format): {path}")
    for path in doc["waiting"]:
        lines.append(f"waiting for the rest of the last line: {path}")
    for error in doc["errors"]:
        lines.append(f"could not read: {error['path']}: {error['error']}")
    if doc["forgotten"]:
        lines.append(f"files gone since the last run, no longer tracked: {doc['forgotten']}")
    if doc["server"]:
        lines.append(f"sent to tap serve at {doc['server']}; its worker extracts the memories (see `tap status`)")
    else:
        written = doc["memories"] or {}
        parts = ", ".join(f"{k} {v}" for k, v in written.items() if v)
        lines.append(
            f"memories written: {doc['memories_written']}"
            + (f" ({parts})" if parts else "")
            + f" from {plural(doc['chunks'], 'chunk')}"
        )
    return "\n".join(lines)
