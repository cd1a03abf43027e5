"""A `tap serve` whose data dir is a small file system of its own, which a test can fill and free.

The server runs in a mount namespace of its own (`unshare --mount`, with `--map-root-user` when the
tests do not run as root) where a size-limited tmpfs is mounted on its data dir; the test reaches
that file system through `/proc/PID/root` (`ServeProcess.state`). Nothing is mounted anywhere else,
and the mount goes away with the server. `small_disk_prefix` is None where the machine allows no
such namespace (the disk tests are then skipped)."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from pathlib import Path

from testkit.serve_process import ServeProcess


def small_disk_prefix(size_mb: int) -> list[str] | None:
    """The command prefix that runs a program with a `size_mb` tmpfs on $TAP_HOME; None when the
    machine cannot make one without privileges we lack."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    prefix = [unshare, "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    mount = f'mount -t tmpfs -o size={size_mb}m tmpfs "$TAP_HOME" && exec "$@"'
    probe = subprocess.run(
        [*prefix, "sh", "-c", mount, "sh", "true"], env={**os.environ, "TAP_HOME": "/tmp"}, check=False
    )
    if probe.returncode != 0:
        return None
    return [*prefix, "sh", "-c", mount, "sh"]


def fill(server: ServeProcess) -> Path:
    """Write a file into the server's data dir until its file system is full; the file's path."""
    filler = server.state / "filler"
    block = b"\0" * (1024 * 1024)
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(block)
                out.flush()
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    with contextlib.suppress(OSError), open(filler, "ab") as out:  # the last partial block
        while True:
            out.write(b"\0" * 4096)
            out.flush()
    return filler
