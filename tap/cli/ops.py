"""`tap status`, `tap extract …` and `tap ui`: what the pipeline is doing, one-shot extraction, the web page link."""

from __future__ import annotations

from typing import Any

import click

from tap.admin_token import ensure_token, read_server_info
from tap.cli.progress import Bar
from tap.cli.render import when
from tap.cli.shared import backend, emit_json, state
from tap.intercept.scopes import scope_rule
from tap.plural import plural

STALLED_LAG_MS = 50.0
"""Event loop lag p99 from which `tap status` says the server is overloaded at times (idle, the
loop is on time: tap.runtime.loop_lag)."""

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def _local_status() -> dict[str, Any]:
    from tap.wiring.cli_reads import view_status  # the files alone: no store, no model

    loaded = state().load()
    doc = view_status(loaded)
    if doc is not None:
        return doc
    from tap.wiring.runtime import runtime  # chromadb, the embedder: only when the files do not say

    with runtime(loaded) as rt:
        stats = rt.store.stats()
        return {
            "server": None,
            "store": {
                "location": stats.location,
                "active": stats.active,
                "total": stats.total,
                "embedder": stats.embedder,
            },
            "extraction": rt.worker.status(),
            "scopes": scope_rule(by_api_key=rt.loaded.config.proxy.scope_by_api_key),
        }


@click.command("status")
@json_option
def status(as_json: bool) -> None:
    """Server, queue, dead letters and today's LLM spend."""
    loaded = state().load()
    info = read_server_info(loaded.data_dir)
    if info is not None:
        from tap.cli.admin_client import AdminClient

        remote = AdminClient(info.url, ensure_token(loaded.data_dir, loaded.config.admin.token_env))
        doc = {"server": info.url, **remote.status()}
    else:
        doc = _local_status()
    if as_json:
        emit_json(doc)
        return
    click.echo(render_status(doc))


def render_status(doc: dict[str, Any]) -> str:
    """A few readable lines from the status document."""
    lines = [f"server: {doc.get('server') or 'not running'}"]
    if "uptime_s" in doc:
        ms = doc["recall_ms"]
        lines.append(
            f"requests: {doc['requests_total']} · degraded: {doc['degraded_total']} · "
            f"recall p50 {ms['p50']} ms, p95 {ms['p95']} ms, p99 {ms['p99']} ms · uptime {doc['uptime_s']} s"
        )
    lag = doc.get("event_loop_lag")
    if lag and lag.get("samples"):
        line = f"event loop lag: p50 {lag['p50_ms']} ms, p99 {lag['p99_ms']} ms, max {lag['max_ms']} ms (last minute)"
        if lag["p99_ms"] >= STALLED_LAG_MS:
            line += (
                " — the server is overloaded at times: requests wait and fewer carry memories"
                " (docs/operations.md: Under load)"
            )
        lines.append(line)
    scopes = doc.get("scopes")
    if scopes:
        lines.append(f"scopes: {scopes['rule']}")
    recall = doc.get("recall")
    if recall:
        lines.append(
            f"recall batches: {plural(recall['served'], 'recall')} in {plural(recall['batches'], 'batch', 'batches')}, "
            f"{recall['lexical_only']} BM25-only and {recall['shed']} shed under load, "
            f"{recall['cache_hits']} from the cache, ~{recall['ms_per_recall']} ms each"
        )
        if recall.get("missed"):
            lines.append(
                f"recall under load: {plural(recall['missed'], 'recall')} missed the deadline; "
                f"{round(100 * recall.get('lexical_share', 0.0))} % of new recalls now start as BM25-only"
            )
        if recall.get("access_counts_unwritten"):
            lines.append(
                f"recall counts of {plural(recall['access_counts_unwritten'], 'memory', 'memories')} wait in memory "
                "for a gap between requests (written before consolidation reads them)"
            )
    store = doc.get("store")
    if store and store.get("shared"):
        lines.append(
            f"store: shared Chroma server; lexical index {plural(store['indexed'], 'memory', 'memories')}, "
            f"at most {store.get('behind_s', 0)} s behind the other processes' writes"
        )
    ex = doc.get("extraction") or {}
    if ex:
        q = ex["queue"]
        lines.append(
            f"queue: {q['queued']} queued, {q['running']} running, {q['done']} done, {q['dead']} dead, "
            f"{plural(q['turns_waiting'], 'turn')} waiting for a full chunk"
        )
        cost = ex["cost_today"]
        lines.append(f"LLM spend today ({cost['day']}): ${cost['cost_usd']:.4f} of ${ex['daily_budget_usd']:.2f}")
        if ex.get("paused"):
            lines.append(f"PAUSED: {ex['paused']}")
        if ex.get("waiting_for_store"):
            lines.append(f"WAITING for the memory store (chunks are kept and retried): {ex['waiting_for_store']}")
        if ex.get("waiting_for_gap"):
            lines.append("extraction waits for a gap between relayed requests (a store write would stall the streams)")
        for dead in ex.get("dead_letters", []):
            lines.append(f"dead letter {dead['id']} ({plural(dead['attempts'], 'try', 'tries')}): {dead['error']}")
        if q["dead"]:
            lines.append("requeue dead letters with `tap extract retry` (works while tap serve runs)")
    consolidation = doc.get("consolidation") or {}
    if "at" in consolidation:
        resumed = consolidation["resumed"]
        lines.append(
            f"consolidation: last cycle {when(consolidation['at'])}, {plural(consolidation['scopes'], 'scope')}"
            " consolidated" + (f", {plural(resumed, 'step')} of an interrupted run finished" if resumed else "")
        )
    if consolidation.get("waiting_for_gap"):
        lines.append("consolidation: waiting for a gap between requests (5 s without one) before the next scope")
    return "\n".join(lines)


@click.group("extract")
def extract() -> None:
    """Run or repair the extraction queue."""


@extract.command("run")
@json_option
def extract_run(as_json: bool) -> None:
    """Chunk every open conversation and extract until the queue is empty (one-shot)."""
    loaded = state().load()
    if read_server_info(loaded.data_dir) is not None:
        raise click.ClickException("tap serve is running and already drains the queue (see `tap status`)")
    from tap.wiring.runtime import runtime

    with runtime(loaded) as rt, Bar("extracting (chunks)", quiet=as_json) as bar:
        done = rt.worker.drain(on_progress=lambda n: bar.update(completed=n))
        result = rt.worker.status()
    if as_json:
        emit_json({"processed": done, **result})
    else:
        click.echo(f"processed {plural(done, 'chunk')}\n" + render_status({"server": None, "extraction": result}))


@extract.command("retry")
def extract_retry() -> None:
    """Put every dead-lettered chunk back in the queue (through the running server, if any)."""
    with backend() as svc:
        click.echo(f"requeued {plural(svc.requeue_dead(), 'chunk')}")


@click.command("ui")
@click.option("--open", "open_browser", is_flag=True, help="Open the link in the default browser too.")
def ui(open_browser: bool) -> None:
    """Print a link to the running server's web page that signs you in: it carries a one-time code
    (after `#`, which the browser never sends anywhere) that works once, for a minute, and opens a
    session; never the admin token, so a browser's command line (`--open`) shows nothing lasting."""
    loaded = state().load()
    info = read_server_info(loaded.data_dir)
    if info is None:
        raise click.ClickException("tap serve is not running on this data dir: start it, then run `tap ui` again")
    from tap.cli.admin_client import AdminClient
    from tap.errors import StoreError

    client = AdminClient(info.url, ensure_token(loaded.data_dir, loaded.config.admin.token_env), timeout=10)
    try:
        code = client.signin_code()
    except (StoreError, KeyError, ValueError) as exc:
        raise click.ClickException(f"could not get a sign-in code from tap serve at {info.url}: {exc}") from None
    link = f"{info.url}/ui#code={code}"
    click.echo(link)
    if open_browser:
        import webbrowser

        if not webbrowser.open(link):
            click.echo("tap: no browser found here; open the link above yourself", err=True)
