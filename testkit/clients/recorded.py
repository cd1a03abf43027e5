"""The request bodies and transcripts recorded from the real CLIs (testkit/clients/record.py writes them).

`recorded("claude-code")` is the folder of the newest recorded version of a client, e.g.
testkit/data/clients/claude-code-2.1.337; `version_of(folder)` is the version it came from.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "clients"


def _version_key(folder: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", folder.name.rsplit("-", 1)[-1]))


def recorded(client: str) -> Path:
    """The folder of the newest recorded version of `client` ("claude-code" or "codex")."""
    folders = [f for f in DATA.glob(f"{client}-*") if f.is_dir() and re.fullmatch(rf"{client}-[\d.]+", f.name)]
    assert folders, f"no recording of {client} in {DATA} (python -m testkit.clients.record)"
    return max(folders, key=_version_key)


def version_of(folder: Path) -> str:
    """The client version a recording came from."""
    return str(json.loads((folder / "meta.json").read_text())["version"])


def body(folder: Path, name: str) -> bytes:
    """A recorded request body, as the CLI sent it."""
    return (folder / name).read_bytes()


def decoded(folder: Path, name: str) -> Any:
    """A recorded request body, decoded."""
    return json.loads(body(folder, name))
