"""The CLI's reads without a server, as real processes: `tap memories list`, `tap status`, `tap
recall` and `tap memories search` answer from the store's read view (tap.wiring.cli_reads) without
importing Chroma, and exactly what the store would answer; what the view cannot answer (archived
memories, old versions, an index not known to be in step) is read from the store instead.

Timings are benchmarks' business (bench/cli.py); these tests check what each command imports.
"""

from __future__ import annotations

import json
import os
import re
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
SEARCH = {"numpy", "asyncio"}  # vectors and an event loop: a listing or a status needs neither


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
    assert contents == ["Ann moved to Lisbon in May"] and modules & (STORE | MODEL | SEARCH) == set()  # records only
    assert listed(home, "--excerpts")[0] == ["User: my cello teacher is Rui"]

    out, modules = probe("status", "--json", home=home)
    status = json.loads(out)
    assert status["store"]["active"] == 2 and status["store"]["total"] == 2 and status["server"] is None
    assert status["extraction"]["queue"]["queued"] == 0 and modules & (STORE | MODEL | SEARCH) == set()

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


def same_to_the_microsecond(a: Any, b: Any) -> bool:
    """The same JSON, numbers equal to the microsecond: Chroma reads a record's timestamps back to
    about their last bit (an `updated_at` of ….9328747 as ….932875)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and abs(a - b) <= 1e-6
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_to_the_microsecond(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_to_the_microsecond(a[k], b[k]) for k in a)
    return bool(a == b)


def through_the_store_then_the_view(home: Path, *args: str, view_answers: bool = True) -> tuple[str, str]:
    """`tap ARGS` twice on the same data dir: through the opened store (the index's clean close
    forgotten, as after a crash: the CLI opens the store, which checks the index and closes it
    cleanly again), then through the read view (`view_answers`; else the view hands it to the
    store); both outputs."""
    with sqlite3.connect(home / "lexical-memories.db") as db:
        db.execute("DELETE FROM meta WHERE key = 'clean_total'")
    full, modules = probe(*args, home=home)
    assert "chromadb" in modules, args
    fast, modules = probe(*args, home=home)
    assert ("chromadb" not in modules) == view_answers, args
    return full, fast


def test_the_view_prints_what_the_store_prints(isolated_home: Path) -> None:
    """Listings (all scopes, one scope, excerpts), status, conflicts, a memory's history with its
    source turns, recall and search without a server print the same through the read view as
    through the opened store, old versions in the store included."""
    home = isolated_home
    ann_allergy, _, bees, _, two_jobs = on_the_store(
        home,
        "ids = [svc.add(scope=s, content=c, kind=k).id for s, c, k in ("
        "('ann', 'Ann moved to Lisbon in May', 'fact'), ('ann', 'Ann is allergic to peanuts', 'fact'),"
        "('ann', 'User: my cello teacher is Rui', 'episode'), ('bo', 'Bo keeps bees in Sintra', 'fact'),"
        "('bo', 'Bo prefers green tea to coffee', 'preference'))]\n"
        "svc.edit(ids[1], content='Ann is allergic to peanuts and cashews')\n"
        "import msgspec\n"
        "google, stripe = (svc.add(scope='bo', content=f'Bo works at {c}') for c in ('Google', 'Stripe'))\n"
        "svc.store.update_metadata([msgspec.structs.replace(google, conflicts_with=(stripe.id,)),"
        " msgspec.structs.replace(stripe, conflicts_with=(google.id,))])\n"
        "from tap.ingest.capture import Exchange\n"
        "from tap.records import make_memory\n"
        "svc.turn_log.append(Exchange(scope='bo', conversation='c1', dialect='anthropic', user_turn_id='t_u1',"
        " user_text='I work at Google and at Stripe', reply_turn_id='t_a1', reply_text='Two jobs!', complete=True,"
        " started_at=1796600000.0, finished_at=1796600001.0))\n"
        "jobs = make_memory(scope='bo', content='Bo has two jobs', conversation='c1', sources=['t_u1'])\n"
        "svc.write([jobs])\n"
        "print(json.dumps(ids[1:] + [jobs.id]))",
    )
    printed = {}
    for args in (
        ["memories", "list"],
        ["memories", "list", "--scope", "ann", "--excerpts"],
        ["memories", "list", "--scope", "bo", "--json"],
        ["status", "--json"],
        ["memories", "conflicts"],
        ["memories", "show", bees],
        ["memories", "show", two_jobs, "--json"],
    ):
        full, fast = through_the_store_then_the_view(home, *args)
        if "--json" in args:
            assert same_to_the_microsecond(json.loads(fast), json.loads(full)), (args, fast, full)
        else:
            assert fast == full, args
        printed[" ".join(args)] = fast
    assert "and cashews" in printed["memories list"] and "Bo keeps bees" in printed["memories list"]
    assert "cello" in printed["memories list --scope ann --excerpts"]
    assert [m["scope"] for m in json.loads(printed["memories list --scope bo --json"])] == ["bo"] * 5
    assert "Bo works at Google" in printed["memories conflicts"] and "Stripe" in printed["memories conflicts"]
    assert "1 version" in printed[f"memories show {bees}"]
    history = json.loads(printed[f"memories show {two_jobs} --json"])["history"]
    assert [t["text"] for t in history[0]["turns"]] == ["I work at Google and at Stripe"]  # from the turn log
    full, fast = through_the_store_then_the_view(home, "memories", "show", ann_allergy, view_answers=False)
    assert fast == full and "2 versions" in fast  # its old version: the store's
    assert json.loads(printed["status --json"])["store"] | {"location": ""} == {
        "location": "",
        "active": 8,
        "total": 9,  # the old version of the edited memory
        "embedder": "all-MiniLM-L6-v2-q8",
    }

    footer = re.compile(r", [\d.]+ ms\)")  # the time the recall took
    full, fast = through_the_store_then_the_view(home, "recall", "What does Bo drink?", "--scope", "bo")
    assert footer.sub(")", fast) == footer.sub(")", full) and "green tea" in fast
    full, fast = through_the_store_then_the_view(home, "memories", "search", "tea", "--json")
    assert [(hit["memory"]["id"], hit["memory"]["content"]) for hit in json.loads(fast)] == [
        (hit["memory"]["id"], hit["memory"]["content"]) for hit in json.loads(full)
    ]
