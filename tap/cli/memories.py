"""`tap memories …` and `tap recall`: inspect, search, edit, delete, export and import memories.

Every read command takes `--json` (the shapes of tap.memories.views); `--scope` names whose memories.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import click

from tap.cli.options import int_range
from tap.cli.progress import Bar, shown
from tap.cli.render import chain_text, console, memories_table, stats_table
from tap.cli.shared import backend, emit_json, reading, state
from tap.config import RecallConfig
from tap.memories.views import memory_view, search_view
from tap.plural import plural
from tap.records import KINDS, Memory

DEFAULT_SCOPE = "default"
BUDGET = int_range(RecallConfig, "budget_tokens")  # what [recall] budget_tokens allows
MAX_BUDGET = int(BUDGET.max or 0)
scope_option = click.option("--scope", default=DEFAULT_SCOPE, show_default=True, help="Whose memories.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
kind_choice = click.Choice(KINDS)


@click.group()
def memories() -> None:
    """Inspect, search, edit, delete, export and import stored memories."""


def change_memory(
    change: Callable[[Any], Memory], *, memory_id: str, as_json: bool, done: Callable[[Memory], str]
) -> None:
    """Run a change of one memory on the backend and show the new record (JSON, or `done`'s line);
    a ClickException for an unknown id or a change the service refuses."""
    with backend() as svc:
        try:
            memory = change(svc)
        except KeyError:
            raise click.ClickException(f"no memory with id {memory_id}") from None
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json(memory_view(memory))
    else:
        click.echo(done(memory))


@memories.command("list")
@click.option("--scope", default=None, help="Only this scope (default: all scopes).")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 100000))
@click.option("--offset", default=0, show_default=True, type=click.IntRange(0))
@click.option(
    "--all-versions", is_flag=True, help="Include superseded versions (the version column marks the current one)."
)
@click.option(
    "--excerpts",
    is_flag=True,
    help="List the verbatim excerpts of the conversations (kind episode) instead of the memories.",
)
@click.option(
    "--archived",
    type=click.Choice(["all", "only", "none"]),
    default="all",
    show_default=True,
    help="Archived memories (never recalled, restorable): listed and marked (all), alone (only), or left out (none).",
)
@json_option
def list_cmd(
    scope: str | None, limit: int, offset: int, all_versions: bool, excerpts: bool, archived: str, as_json: bool
) -> None:
    """List memories (statements), newest first; --excerpts lists the verbatim layer."""
    which = {"all": None, "only": True, "none": False}[archived]

    def page(svc: Any) -> tuple[list[Memory], bool, int]:
        found = svc.list_memories(
            scope=scope, limit=limit, offset=offset, all_versions=all_versions, excerpts=excerpts, archived=which
        )
        # a full or later page may not be all: count, to say how to see the rest (on stderr)
        more = not as_json and (len(found) == limit or offset > 0)
        total = (
            svc.count_memories(scope=scope, all_versions=all_versions, excerpts=excerpts, archived=which)
            if more
            else len(found)
        )
        return found, more, total

    found, more, total = reading(page)
    if as_json:
        emit_json([memory_view(m) for m in found])
    elif not found:
        click.echo("no memories" + (f" in scope {scope!r}" if scope else "") + (f" past {offset}" if offset else ""))
    else:
        click.echo(memories_table(found, versions=all_versions))
        if more:
            click.echo(_page_note(offset, len(found), total), err=True)


def _page_note(offset: int, shown: int, total: int) -> str:
    """'51–100 of 312 (next: --offset 100)'."""
    note = f"{offset + 1}–{offset + shown} of {total}"
    return note + (f" (next: --offset {offset + shown})" if offset + shown < total else "")


@memories.command("search")
@click.argument("query")
@click.option("--scope", default=None, help="Only this scope (default: all scopes).")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 500))
@json_option
def search_cmd(query: str, scope: str | None, limit: int, as_json: bool) -> None:
    """Search memories (hybrid vector + lexical ranking), in every scope or in one."""
    results: list[tuple[Memory, float]] = reading(lambda svc: svc.search(query, scope=scope, limit=limit))
    if as_json:
        emit_json(search_view(results))
    elif not results:
        click.echo("nothing relevant" + (f" in scope {scope!r}" if scope else " in any scope"))
    else:
        click.echo(memories_table([m for m, _ in results], scores=[s for _, s in results]))


@memories.command("show")
@click.argument("memory_id")
@json_option
def show_cmd(memory_id: str, as_json: bool) -> None:
    """Show a memory with every version of it (edits, updates, merges), oldest first, and the
    conversation turns each version came from (while tap still keeps them)."""
    chain, turns = reading(lambda svc: svc.history(memory_id))
    if not chain:
        raise click.ClickException(f"no memory with id {memory_id}")
    if as_json:
        from tap.memories.history import history_view

        emit_json({"id": memory_id, "chain": [memory_view(m) for m in chain], "history": history_view(chain, turns)})
    else:
        current = next((m.id for m in chain if m.current), memory_id)
        click.echo(f"{plural(len(chain), 'version')}, oldest first (current: {current}):\n\n{chain_text(chain, turns)}")


@memories.command("add")
@click.argument("content")
@scope_option
@click.option("--kind", type=kind_choice, default="fact", show_default=True)
@click.option("--importance", type=click.IntRange(1, 5), default=3, show_default=True)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@json_option
def add_cmd(content: str, scope: str, kind: str, importance: int, tags: tuple[str, ...], as_json: bool) -> None:
    """Add a memory by hand."""
    change_memory(  # refused when nothing is left once private spans are removed
        lambda svc: svc.add(scope=scope, content=content, kind=kind, importance=importance, tags=list(tags)),
        memory_id="",
        as_json=as_json,
        done=lambda memory: f"added {memory.id} to scope {memory.scope!r}",
    )


@memories.command("edit")
@click.argument("memory_id")
@click.option("--content", default=None, help="New text.")
@click.option("--kind", type=kind_choice, default=None)
@click.option("--importance", type=click.IntRange(1, 5), default=None)
@click.option("--tag", "tags", multiple=True, help="Replace the tags (repeatable).")
@json_option
def edit_cmd(
    memory_id: str,
    content: str | None,
    kind: str | None,
    importance: int | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Edit a memory: writes a new version, the old one stays in its history."""
    if content is None and kind is None and importance is None and not tags:
        raise click.UsageError("nothing to change: give --content, --kind, --importance or --tag")
    change_memory(
        lambda svc: svc.edit(memory_id, content=content, kind=kind, importance=importance, tags=list(tags) or None),
        memory_id=memory_id,
        as_json=as_json,
        done=lambda memory: f"{memory_id} → {memory.id} (old version kept; `tap memories show {memory.id}`)",
    )


@memories.command("forget")
@click.argument("memory_id", required=False)
@click.option("--scope", default=None, help="Forget everything of this scope instead, in every file tap keeps.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (required when not on a terminal).")
@json_option
def forget_cmd(memory_id: str | None, scope: str | None, yes: bool, as_json: bool) -> None:
    """Delete a memory, all its versions and its source turns for good (or, with --scope, everything
    tap keeps of a scope: memories, lexical index, queue, turn log, log-tail state, Telegram history)."""
    if (memory_id is None) == (scope is None):
        raise click.UsageError("give a MEMORY_ID or --scope SCOPE (one of them)")
    if scope is not None:
        _forget_scope(scope, yes, as_json)
        return
    assert memory_id is not None
    _confirm(f"Delete {memory_id} and its history for good?", yes)
    with backend() as svc:
        forgotten = svc.forget_memory(memory_id)
    if not forgotten.deleted:
        raise click.ClickException(f"no memory with id {memory_id}")
    if as_json:
        emit_json(forgotten)
        return
    click.echo(f"deleted {plural(len(forgotten.deleted), 'version')}: {', '.join(forgotten.deleted)}")
    if forgotten.excerpts:
        excerpts = plural(len(forgotten.excerpts), "excerpt")
        click.echo(f"and {excerpts} of its source turns: {', '.join(forgotten.excerpts)}")
    removed = ", ".join(f"{n} from the {where}" for where, n in forgotten.source_turns.items() if n)
    if removed:
        click.echo(f"source turns removed: {removed}")


def _confirm(question: str, yes: bool) -> None:
    """Ask on a terminal; elsewhere (a script, a pipe) deleting for good needs --yes."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.UsageError("deleting for good needs confirmation: not on a terminal, so add --yes")
    click.confirm(question, abort=True, err=True)  # on stderr, so `--json` output stays clean


def _forget_scope(scope: str, yes: bool, as_json: bool) -> None:
    _confirm(f"Delete everything tap keeps of scope {scope!r}, for good?", yes)
    with backend() as svc:
        removed = svc.erase_scope(scope)
    if as_json:
        emit_json({"scope": scope, "removed": removed})
        return
    click.echo(f"forgot scope {scope!r}: " + ", ".join(f"{where} {n}" for where, n in removed.items()))


@memories.command("export")
@click.option("--scope", default=None, help="Only this scope (default: all).")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to a file (default: stdout).",
)
def export_cmd(scope: str | None, output: Path | None) -> None:
    """Export whole records as JSONL (superseded versions included; import restores them exactly).
    A progress bar shows on stderr when it is a terminal."""
    with backend() as svc:
        total = svc.count_memories(scope=scope, all_versions=True) if shown() else None
        with Bar("exporting", total=total) as bar:
            if output is None:
                _write_lines(svc.export(scope=scope), sys.stdout.buffer, bar)
                return
            tmp = output.with_name(output.name + ".part")
            with tmp.open("wb") as handle:
                count = _write_lines(svc.export(scope=scope), handle, bar)
            tmp.replace(output)
    click.echo(f"exported {plural(count, 'record')} to {output}", err=True)


def _write_lines(lines: Any, handle: BinaryIO, bar: Bar) -> int:
    count = 0
    for line in lines:
        handle.write(line)
        count += 1
        bar.advance()
    handle.flush()
    return count


IMPORT_BATCH = 500  # lines per call: the bar moves, and through a server no request grows unbounded


@memories.command("import")
@click.argument("source", type=click.File("rb"))
@json_option
def import_cmd(source: BinaryIO, as_json: bool) -> None:
    """Import a JSONL export (ids kept; existing records left alone; bad lines reported by number).
    A progress bar shows on stderr when it is a terminal and --json is not given."""
    imported = unchanged = 0
    errors: list[tuple[int, str]] = []
    with backend() as svc, Bar("importing", total=_size(source), quiet=as_json, in_bytes=True) as bar:
        for first, lines in _batches(source, IMPORT_BATCH):
            part = svc.import_lines(lines)
            imported, unchanged = imported + part.imported, unchanged + part.unchanged
            errors += [(first + number - 1, reason) for number, reason in part.errors]
            bar.advance(sum(len(line) for line in lines))
    if as_json:
        emit_json({"imported": imported, "unchanged": unchanged, "errors": errors})
    else:
        click.echo(f"imported {imported}, already present {unchanged}, rejected {len(errors)}")
    for line, reason in errors:
        click.echo(f"{getattr(source, 'name', '<stdin>')}:{line}: {reason}", err=True)
    if errors:
        sys.exit(1)


def _size(source: BinaryIO) -> int | None:
    """The file's size in bytes (None for a pipe)."""
    try:
        return os.fstat(source.fileno()).st_size or None if source.seekable() else None
    except (OSError, ValueError):
        return None


def _batches(source: BinaryIO, size: int) -> Iterator[tuple[int, list[bytes]]]:
    """(number of the first line, lines) for every `size` lines."""
    batch: list[bytes] = []
    first = 1
    for number, line in enumerate(source, start=1):
        batch.append(line)
        if len(batch) == size:
            yield first, batch
            first, batch = number + 1, []
    if batch:
        yield first, batch


@memories.command("stats")
@json_option
def stats_cmd(as_json: bool) -> None:
    """Counts by scope and kind, and the store size."""
    with backend() as svc:
        stats = svc.stats()
    if as_json:
        emit_json(stats)
    else:
        console().print(stats_table(stats))


@click.command("recall")
@click.argument("text")
@scope_option
@click.option(
    "--budget",
    "budget_tokens",
    type=BUDGET,
    default=None,
    help="Token budget (default: [recall] budget_tokens).",
)
@json_option
def recall(text: str, scope: str, budget_tokens: int | None, as_json: bool) -> None:
    """Show the memory block tap would inject for TEXT."""

    def recalled(svc: Any) -> tuple[dict[str, Any], str]:
        view = svc.recall_json(text, scope=scope, budget_tokens=budget_tokens)
        empty = not as_json and not view["memories"]
        return view, _nothing_recalled(svc, text, scope, budget_tokens) if empty else ""

    view, nothing = reading(recalled)
    if as_json:
        emit_json(view)
    elif nothing:
        click.echo(nothing)
    else:
        click.echo(view["block"])
        count = plural(len(view["memories"]), "memory", "memories")
        click.echo(f"\n({count}, {view['tokens']} tokens, {view['elapsed_ms']:.1f} ms)", err=True)


def _nothing_recalled(svc: Any, text: str, scope: str, budget_tokens: int | None) -> str:
    """Why the block is empty: nothing relevant, or relevant memories that do not fit the budget
    (then the smallest budget that takes one). Search ranks like recall but counts no access."""
    found = svc.search(text, scope=scope, limit=50)
    if not found:
        return f"nothing relevant in scope {scope!r}"
    from tap.recall.engine import pack_block  # pure packing, no store; only on this path

    budget = budget_tokens if budget_tokens is not None else state().load().config.recall.budget_tokens
    low, high = budget, MAX_BUDGET
    if not pack_block(found, high).memories:
        return f"{len(found)} relevant in scope {scope!r}, but none fits even in {MAX_BUDGET} tokens"
    while low + 1 < high:  # pack_block fits something at `high` and nothing at `low`
        middle = (low + high) // 2
        low, high = (low, middle) if pack_block(found, middle).memories else (middle, high)
    what = "1 memory is" if len(found) == 1 else f"{len(found)} memories are"
    block = "a block with it" if len(found) == 1 else "the smallest block with one of them"
    return (
        f"the budget of {budget} tokens is too small: {what} relevant in scope {scope!r}, "
        f"and {block} takes {high} tokens (try --budget {high})"
    )
