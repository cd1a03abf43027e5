"""The CLI's reads without a server, as real processes: `tap memories list`, `tap status`, `tap
recall` and `tap memories search` answer from the store's read view (tap.wiring.cli_reads) without
importing Chroma, and exactly what the store would answer; what the view cannot answer (archived
memories, old versions, an index not known to be in step) is read from the store instead.

Timings are benchmarks' business (bench/cli.py); these tests check what each command imports.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tap.cli.test_cli_startup import probe

pytestmark = pytest.mark.slow  # every command is a new process

STORE = {"chromadb"}
MODEL = {"onnxruntime", "tokenizers"}


ON_THE_STORE = """
import json, sys
from tap.config import load_config
from tap.wiring.runtime import runtime
with runtime(load_config(None)) as rt:
    svc = rt.memories
    exec(sys.argv[1])
"""


def on_the_store(home: Path, code: str) -> Any:
    """Run `code` with `svc`, the MemoryService of the opened store itself (writes, and the answers
    to compare with: not through the CLI's read view), in one process; what it prints, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", ON_THE_STORE, code],
        env={**os.environ, "TAP_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


RECALL = "print(json.dumps(svc.recall_json('Where does Ann live?', scope='ann')))"


def same_block(a: Any, b: Any) -> bool:
    """The same block of the same memories, in the same order (scores differ in the last digits:
    recency is weighed at the moment of each recall)."""
    return bool(a["block"] == b["block"] and [m["id"] for m in a["memories"]] == [m["id"] for m in b["memories"]])


def listed(home: Path, *args: str) -> tuple[list[str], set[str]]:
    out, modules = probe("memories", "list", *args, "--json", home=home)
    return [m["content"] for m in json.loads(out)], modules


def test_reads_without_a_server_leave_chroma_alone_and_agree_with_the_store(isolated_home: Path) -> None:
    home = isolated_home
    lisbon, _ = on_the_store(
        home,
        "print(json.dumps([svc.add(scope='ann', content=c, kind=k).id for c, k in ("
        "('Ann moved to Lisbon in May', 'fact'), ('User: my cello teacher is Rui', 'episode'))]))",
    )
    contents, modules = listed(home)
    assert contents == ["Ann moved to Lisbon in May"] and modules & (STORE | MODEL) == set()  # no Chroma, no model
    assert listed(home, "--excerpts")[0] == ["User: my cello teacher is Rui"]

    out, modules = probe("status", "--json", home=home)
    status = json.loads(out)
    assert status["store"]["active"] == 2 and status["store"]["total"] == 2 and status["server"] is None
    assert status["extraction"]["queue"]["queued"] == 0 and modules & (STORE | MODEL) == set()

    out, modules = probe("recall", "Where does Ann live?", "--scope", "ann", "--json", home=home)
    view = json.loads(out)
    assert lisbon in [m["id"] for m in view["memories"]] and modules & STORE == set()
    assert same_block(view, on_the_store(home, RECALL))
    out, modules = probe("memories", "search", "cello", "--json", home=home)
    assert "cello" in json.loads(out)[0]["memory"]["content"] and modules & STORE == set()

    # an archived memory, and an old version: the default listing shows the first, so it reads the
    # store, and so does --all-versions, and recall for the old value's history; the rest, the view
    moved = on_the_store(
        home,
        f"svc.archive(svc.add(scope='ann', content='Ann drank oolong tea').id)\n"
        f"print(json.dumps(svc.edit('{lisbon}', content='Ann moved to Porto in June').id))",
    )
    contents, modules = listed(home)
    assert "Ann drank oolong tea" in contents and "chromadb" in modules
    contents, modules = listed(home, "--archived", "none")
    assert contents == ["Ann moved to Porto in June"] and modules & STORE == set()
    contents, modules = listed(home, "--all-versions", "--archived", "none")
    assert "Ann moved to Lisbon in May" in contents and "chromadb" in modules
    out, modules = probe("recall", "Where does Ann live?", "--scope", "ann", "--json", home=home)
    view = json.loads(out)
    assert same_block(view, on_the_store(home, RECALL)) and moved in [m["id"] for m in view["memories"]]


def test_an_index_not_known_to_be_in_step_is_not_trusted(isolated_home: Path) -> None:
    """After a crash (no clean close recorded) the store is opened, and checks the index, instead."""
    on_the_store(isolated_home, "print(json.dumps(svc.add(scope='bo', content='Bo keeps bees in Sintra').id))")
    with sqlite3.connect(isolated_home / "lexical-memories.db") as db:
        db.execute("DELETE FROM meta WHERE key = 'clean_total'")  # as a process killed mid-way leaves it
    contents, modules = listed(isolated_home)
    assert contents == ["Bo keeps bees in Sintra"] and "chromadb" in modules
    contents, modules = listed(isolated_home)
    assert contents == ["Bo keeps bees in Sintra"] and modules & STORE == set()  # closed cleanly since


def test_printing_commands_import_neither_the_store_nor_mitmproxy(isolated_home: Path) -> None:
    _, modules = probe("mitm", "ca", home=isolated_home)
    assert modules & (STORE | MODEL) == set()  # creating the CA once takes mitmproxy's certificate code
    for command in (["env"], ["mitm", "ca"], ["env", "mitm"], ["config", "check"], ["hooks", "status"]):
        _, modules = probe(*command, home=isolated_home)
        assert modules & (STORE | MODEL | {"mitmproxy", "aiohttp"}) == set(), command
