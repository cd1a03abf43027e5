"""The `tap` console entry point: `tap hook EVENT` starts without tap's heavy imports.

An agent runs `tap hook …` on every prompt, so its start-up is on the user's path. tap.cli imports
every command's dependencies (chromadb, onnxruntime, aiohttp, the Telegram library: seconds), so a
hook invocation is recognised here first and handed to bridges.hooks.command, which needs the
standard library only when a `tap serve` is running; without one it opens the store itself
(tap.wiring.hook_service, imported only then). Stop and SessionEnd are first handed over to a
process of their own (bridges.hooks.detach), so the agent does not wait for them. Everything else goes to the
click CLI (tap.cli), which also has `tap hook` (same behaviour, for `--help` and tests).
"""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bridges.hooks.command import Invocation


def _embedded(invocation: Invocation, body: bytes) -> bytes:
    from tap.wiring.hook_service import run_embedded  # the store and pipeline: only without a server

    return run_embedded(invocation, body)


def _is_hook_call(argv: list[str]) -> bool:
    from bridges.hooks.command import is_hook_call  # only when "hook" is on the line: every command starts here

    return is_hook_call(argv)


def main() -> None:
    """Run `tap` with the process's arguments."""
    argv = sys.argv[1:]
    if "hook" in argv:
        from bridges.hooks.detach import can_detach, hand_over  # os only: before anything else

        if can_detach(argv):  # Stop, SessionEnd: the agent waits for this process, not for the hand-over
            body = sys.stdin.buffer.read()
            script = sys.argv[0]
            again = ["-m", "tap"] if script.endswith("__main__.py") else [script]  # `python -m tap` or the script
            try:
                hand_over([sys.executable, *again, *argv], body)
                sys.exit(0)
            except OSError:
                sys.stdin = io.TextIOWrapper(io.BytesIO(body))  # handled here after all
    if "hook" in argv and _is_hook_call(argv):
        from bridges.hooks.command import run

        sys.exit(run(argv, embedded=_embedded))
    from tap.cli.main import main as cli

    cli()
