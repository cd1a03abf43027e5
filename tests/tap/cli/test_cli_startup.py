"""The CLI starts without its heavy dependencies: each command runs in a fresh interpreter and
reports which of them ended up in `sys.modules`.

`tap --help` must import none of them; the memory commands against a running `tap serve` talk to
its admin API and must not import the store or the embedder either. A top-level import of one of
these modules anywhere on the CLI's import path makes these tests fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.serve_process import ServeProcess

STORE_AND_MODEL = {"chromadb", "onnxruntime", "numpy", "tokenizers"}
EVERY_HEAVY = STORE_AND_MODEL | {"telegram", "aiohttp", "mitmproxy", "rich", "httpx", "ollama", "anthropic"}

PROBE = """
import json, sys
sys.argv = ["tap", *json.loads(sys.argv[1])]
from tap.cli.launch import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted({name.split(".")[0] for name in sys.modules})
sys.stderr.write("\\nPROBE " + json.dumps({"code": code, "modules": loaded, "all": sorted(sys.modules)}) + "\\n")
"""


def probe(*args: str, home: Path, every: bool = False) -> tuple[str, set[str]]:
    """Run `tap ARGS` in a new interpreter; its stdout and the top-level modules it imported (every
    module, dotted names too, with `every`)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))],
        env={**os.environ, "TAP_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(done.stderr.rsplit("PROBE ", 1)[1])
    assert report["code"] in (0, None), done.stderr
    return done.stdout, set(report["all" if every else "modules"])


@pytest.mark.slow
def test_help_imports_nothing_heavy(isolated_home: Path) -> None:
    out, modules = probe("--help", home=isolated_home)
    assert "memories" in out and "serve" in out
    assert modules & EVERY_HEAVY == set()


@pytest.mark.slow
def test_subcommand_help_imports_nothing_heavy(isolated_home: Path) -> None:
    for command in (["memories", "--help"], ["ingest", "--help"], ["telegram", "info", "--help"]):
        out, modules = probe(*command, home=isolated_home)
        assert "Usage:" in out
        assert modules & EVERY_HEAVY == set(), command


@pytest.mark.slow
def test_commands_against_a_server_leave_the_store_to_it(isolated_home: Path) -> None:
    server = ServeProcess(isolated_home).start()
    try:
        added = subprocess.run(
            [sys.executable, "-m", "tap", "memories", "add", "Ann moved to Lisbon in May", "--scope", "ann"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert added.returncode == 0, added.stderr
        out, modules = probe("recall", "Where does Ann live?", "--scope", "ann", home=isolated_home)
        assert "Lisbon" in out and modules & STORE_AND_MODEL == set()
        out, modules = probe("status", home=isolated_home)
        assert server.url in out and modules & STORE_AND_MODEL == set()
        out, modules = probe("memories", "list", home=isolated_home)
        assert "Lisbon" in out and modules & EVERY_HEAVY == set()  # a plain-text table: no rich
        out, modules = probe("memories", "search", "Lisbon", home=isolated_home)
        assert "Lisbon" in out and modules & EVERY_HEAVY == set()
    finally:
        server.stop()


@pytest.mark.slow
def test_commands_load_only_the_modules_they_need(isolated_home: Path) -> None:
    lazy = {"tap.cli.ingest", "tap.cli.hooks", "tap.cli.mitm", "tap.cli.telegram", "bridges.logtail"}
    _, modules = probe("config", "check", home=isolated_home, every=True)
    assert modules & lazy == set()  # the log-tail, hooks, mitm and Telegram commands load when called
    out, modules = probe("ingest", "--help", home=isolated_home, every=True)
    assert "--follow" in out and {"tap.cli.ingest", "bridges.logtail"} <= modules


def test_the_lazy_commands_are_listed_with_their_own_help() -> None:
    import click

    from tap.cli.main import LAZY_COMMANDS, main

    context = click.Context(main)
    for name, (_, listed) in LAZY_COMMANDS.items():
        command = main.get_command(context, name)
        assert command is not None and command.help is not None
        assert command.help.split("\n\n")[0] == listed, name
        assert any(p.name == "config" for p in command.params), name  # --config after the command too
