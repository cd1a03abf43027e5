"""The real agent CLIs (Claude Code, Codex) from the npm registry, installed once per machine and version.

`install(package, version)` runs `npm install <package>@<version>` into a folder under the system's
temporary directory (`tap-test-clients/<package>@<version>`) and returns the folder; later test
sessions on the same machine reuse it (a marker file is written once the install succeeded, so a
half-finished install is redone). A file lock keeps two test workers from installing into the same
folder at once. Where node or npm is missing or the registry cannot be reached, `install` raises
`ClientUnavailable` with the reason, which the tests turn into a skip.

The versions tried end to end (README, Clients tried end to end) are pinned here; the environment
variables `TAP_TEST_CLAUDE_CODE_VERSION` / `TAP_TEST_CODEX_VERSION` choose others (`latest` included).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CLAUDE_CODE = "@anthropic-ai/claude-code"
CODEX = "@openai/codex"
PINNED = {CLAUDE_CODE: "2.1.337", CODEX: "0.171.0"}
VERSION_ENV = {CLAUDE_CODE: "TAP_TEST_CLAUDE_CODE_VERSION", CODEX: "TAP_TEST_CODEX_VERSION"}
BINARIES = {CLAUDE_CODE: "claude", CODEX: "codex"}
INSTALL_TIMEOUT_S = 600
_DONE = ".tap-installed"


class ClientUnavailable(RuntimeError):
    """The CLI cannot be installed here (the message says why)."""


def wanted_version(package: str) -> str:
    """The version the tests run: the environment's choice, else the pinned one."""
    return os.environ.get(VERSION_ENV[package], "").strip() or PINNED[package]


def cache_root() -> Path:
    """Where installed CLIs are kept between test sessions."""
    return Path(tempfile.gettempdir()) / "tap-test-clients"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install(package: str, version: str | None = None) -> Path:
    """The folder `package@version` is installed in (installing it first when needed)."""
    version = version or wanted_version(package)
    if not re.fullmatch(r"[A-Za-z0-9.+-]+", version):
        raise ClientUnavailable(f"not a version: {version!r}")
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise ClientUnavailable("node and npm are not installed")
    folder = cache_root() / f"{package.replace('/', '+')}@{version}"
    with _locked(folder.with_name(folder.name + ".lock")):
        if (folder / _DONE).exists() and binary(folder, package).exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        args = [npm, "install", "--no-audit", "--no-fund", "--prefer-online", "--prefix", str(folder)]
        try:
            done = subprocess.run(
                [*args, f"{package}@{version}"],
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ClientUnavailable(f"npm install {package}@{version} took over {INSTALL_TIMEOUT_S} s") from None
        if done.returncode != 0 or not binary(folder, package).exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ClientUnavailable(f"npm install {package}@{version} failed: {' / '.join(tail)}")
        (folder / _DONE).write_text(installed_version(folder, package))
    return folder


def binary(folder: Path, package: str) -> Path:
    """The CLI's executable in an install folder."""
    return folder / "node_modules" / ".bin" / BINARIES[package]


def installed_version(folder: Path, package: str) -> str:
    """The version npm actually installed (what `latest` resolved to)."""
    manifest = folder / "node_modules" / package / "package.json"
    return str(json.loads(manifest.read_text())["version"])
