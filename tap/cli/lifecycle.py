"""`tap memories consolidate|conflicts|resolve|archive|restore` and `tap why`: living with memory for
months (docs/memory.md: Consolidation, Conflicts, Why was this injected?).

Like every memory command these go through a running `tap serve` when there is one (then
consolidation runs on the server's background thread, after its extraction batch in progress);
`tap why` needs the server, since the records of its requests live in its memory only.
"""

from __future__ import annotations

from typing import Any

import click

from tap.admin_token import ensure_token, read_server_info
from tap.cli.memories import change_memory, json_option, memories
from tap.cli.progress import Bar
from tap.cli.render import when
from tap.cli.shared import backend, emit_json, reading, state
from tap.memories.views import memory_view
from tap.plural import plural


@memories.command("consolidate")
@click.option("--scope", default=None, help="Only this scope (default: every scope).")
@click.option("--dry-run", is_flag=True, help="Show what would be merged and archived; change nothing.")
@json_option
def consolidate_cmd(scope: str | None, dry_run: bool, as_json: bool) -> None:
    """Merge near-duplicates into one memory citing all their sources (the old ones stay as its
    history) and archive stale low-importance memories ([consolidate] in the config). Progress
    shows on stderr when it is a terminal and --json is not given: scope by scope, or, through a
    running server (which answers when it is done), the time it has been working."""
    with backend() as svc:
        report = _consolidate(svc, scope, dry_run, as_json)
    if as_json:
        emit_json(report)
        return
    verb = ("would merge", "would archive") if dry_run else ("merged", "archived")
    groups = report["groups"]
    resumed = f", {plural(report['resumed'], 'step')} of an interrupted run finished" if report["resumed"] else ""
    click.echo(
        f"{verb[0]} {plural(report['merged'], 'memory', 'memories')} into {len(groups)},"
        f" {verb[1]} {report['archived']} ({plural(report['scopes'], 'scope')}{resumed})"
    )
    for group in groups:
        into = "" if dry_run else f" → {group['into']}"
        click.echo(f"  merge {', '.join(group['members'])}{into}\n    {group['content']}")
    for pick in report["archived_memories"]:
        click.echo(f"  archive {pick['id']} ({pick['reason']}): {pick['content']}")


def _consolidate(svc: Any, scope: str | None, dry_run: bool, as_json: bool) -> dict[str, Any]:
    """Run consolidation on `svc` (the store here, or the running server) behind a progress line."""
    from tap.cli.admin_client import AdminClient

    if isinstance(svc, AdminClient):
        with Bar("consolidating (tap serve)", quiet=as_json, counted=False):
            return svc.consolidate(scope=scope, dry_run=dry_run)
    with Bar("consolidating scopes", quiet=as_json) as bar:
        return dict(
            svc.consolidate(
                scope=scope, dry_run=dry_run, on_scope=lambda done, total: bar.update(completed=done, total=total)
            )
        )


@memories.command("conflicts")
@click.option("--scope", default=None, help="Only this scope (default: every scope).")
@json_option
def conflicts_cmd(scope: str | None, as_json: bool) -> None:
    """List the pairs of memories that contradict each other, where tap could not tell which is
    current; recall shows both (with their dates) until you settle them with `resolve`."""
    found = reading(lambda svc: svc.conflicts(scope=scope))
    if as_json:
        emit_json({"conflicts": [{"a": memory_view(c.a), "b": memory_view(c.b), "since": c.since} for c in found]})
        return
    if not found:
        click.echo("no unresolved conflicts" + (f" in scope {scope!r}" if scope else ""))
        return
    for conflict in found:
        click.echo(f"since {when(conflict.since)} in scope {conflict.a.scope!r}:")
        for memory in (conflict.a, conflict.b):
            click.echo(f"  {memory.id}  {when(memory.valid_from or memory.created_at)[:10]}  {memory.content}")
        a, b = conflict.a.id, conflict.b.id
        click.echo(f"  settle: tap memories resolve {a} --keep {b}  (or --keep {a}, or --both)")


@memories.command("resolve")
@click.argument("memory_id")
@click.option("--keep", "keep", default=None, help="The memory to keep (MEMORY_ID or the one it conflicts with).")
@click.option("--both", is_flag=True, help="Both are true: keep both and drop the conflict mark.")
@json_option
def resolve_cmd(memory_id: str, keep: str | None, both: bool, as_json: bool) -> None:
    """Settle the conflict of MEMORY_ID: --keep names the memory that stays current (the other is
    superseded by it and kept as history), or --both keeps both."""
    if (keep is None) == (not both):
        raise click.UsageError("give --keep ID (the memory to keep) or --both")
    with backend() as svc:
        memory = svc.get(memory_id)
        if memory is None:
            raise click.ClickException(f"no memory with id {memory_id}")
        partners = [i for i in memory.conflicts_with]
        if both:
            pairs = [(memory_id, other) for other in partners]
        elif keep == memory_id:
            pairs = [(memory_id, other) for other in partners]
        elif keep is not None and keep in partners:
            pairs = [(keep, memory_id)]
        else:
            raise click.ClickException(
                f"{keep} is not {memory_id} nor a memory it conflicts with ({', '.join(partners) or 'none'})"
            )
        if not pairs:
            raise click.ClickException(f"{memory_id} is in no conflict (`tap memories conflicts` lists them)")
        try:
            settled = [svc.resolve(k, d, both=both) for k, d in pairs]
        except KeyError as exc:
            raise click.ClickException(f"no memory with id {exc.args[0]}") from None
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json(
            [
                {
                    "kept": memory_view(s.kept),
                    "superseded": None if s.superseded is None else memory_view(s.superseded),
                    "also_kept": None if s.also_kept is None else memory_view(s.also_kept),
                }
                for s in settled
            ]
        )
        return
    for s in settled:
        if s.superseded is not None:
            click.echo(f"kept {s.kept.id}; {s.superseded.id} is superseded by it (kept as history)")
        else:
            click.echo(f"kept both {s.kept.id} and {s.also_kept.id if s.also_kept else '?'}; no longer in conflict")


@memories.command("archive")
@click.argument("memory_id")
@json_option
def archive_cmd(memory_id: str, as_json: bool) -> None:
    """Archive a memory: it stays listed and restorable, but is never recalled."""
    _change("archive", memory_id, as_json)


@memories.command("restore")
@click.argument("memory_id")
@json_option
def restore_cmd(memory_id: str, as_json: bool) -> None:
    """Bring an archived memory back into recall."""
    _change("restore", memory_id, as_json)


def _change(action: str, memory_id: str, as_json: bool) -> None:
    change_memory(
        lambda svc: getattr(svc, action)(memory_id),
        memory_id=memory_id,
        as_json=as_json,
        done=lambda memory: f"{action}d {memory.id}" if action == "archive" else f"restored {memory.id}",
    )


@click.command("why")
@click.argument("request_id", required=False)
@click.option("--last", is_flag=True, help="The latest request (the default without REQUEST_ID).")
@click.option(
    "--list", "list_n", type=click.IntRange(1, 10000), default=None, help="List the latest N requests instead."
)
@json_option
def why(request_id: str | None, last: bool, list_n: int | None, as_json: bool) -> None:
    """Why was this injected? For a proxied request (its `x-tap-request-id`, or --last): the query
    recall used, and each candidate memory with its vector, lexical, recency and importance scores
    and why it made the block or missed it. Needs the running `tap serve` (records live in its
    memory for [why] keep_minutes)."""
    if request_id is not None and last:
        raise click.UsageError("give REQUEST_ID or --last, not both")
    loaded = state().load()
    info = read_server_info(loaded.data_dir)
    if info is None:
        raise click.ClickException(
            "no tap serve is running: `tap why` shows what a running server recalled (kept in its memory only)"
        )
    from tap.cli.admin_client import AdminClient

    remote = AdminClient(info.url, ensure_token(loaded.data_dir, loaded.config.admin.token_env))
    if list_n is not None:
        recent = remote.why_recent(list_n)
        if as_json:
            emit_json({"requests": recent})
        else:
            for r in recent:
                degraded = f"  degraded {r['degraded']}" if r["degraded"] else ""
                click.echo(
                    f"{r['request_id']}  {when(r['at'])}  {r['method']} {r['path'] or '-'}  scope {r['scope'] or '-'}"
                    f"  injected {r['injected']}  recall {r['recall_ms']:.1f} ms{degraded}"
                )
        return
    try:
        record = remote.why(request_id)
    except KeyError as exc:
        raise click.ClickException(str(exc.args[0])) from None
    if as_json:
        emit_json(record)
    else:
        click.echo(why_text(record))


OUTCOMES = {
    "injected": "in the block",
    "over-budget": "relevant, but no room was left for it in the block",
    "repeat": "left out: a line in the block says the same already",
    "visible": "left out: the model already sees it in the request",
    "skipped": "left out: already given",
    "below-threshold": "below the relevance threshold",
    "superseded": "an old version",
    "archived": "archived (restore it to have it recalled)",
}


def why_text(record: dict[str, Any]) -> str:
    """A request's record for the terminal."""
    head = [
        f"request {record['request_id']}  {when(record['at'])}  {record['method']} {record['path'] or '-'}"
        f" → {record['upstream_status'] or '-'} in {record['duration_ms']:.0f} ms",
        f"scope {record['scope'] or '-'} · conversation {record['conversation'] or '-'}"
        f" · injected {record['injected']} · recall {record['recall_ms']:.1f} ms"
        + (f" · degraded: {record['degraded']}" if record["degraded"] else ""),
    ]
    if record.get("reused_from"):
        head.append(f"the block was recalled by {record['reused_from']} (an earlier request of this turn)")
    head.append(f"query: {record['query'] or '-'}")
    if not record["candidates"]:
        head.append("no candidates (recall did not run, or found nothing)")
        return "\n".join(head)
    lines = []
    for c in record["candidates"]:
        scores = " ".join(
            f"{name} {'-' if c[name] is None else format(c[name], '.3f')}"
            for name in ("vector", "lexical", "recency", "importance", "score")
        )
        why_text_ = OUTCOMES.get(c["outcome"], c["outcome"])
        extra = f" by {c['superseded_by']}" if c.get("superseded_by") else ""
        lines.append(f"  [{c['outcome']}] {c['id']}  {scores}\n      {c['content']}\n      → {why_text_}{extra}")
    return "\n".join([*head, "candidates:", *lines])
