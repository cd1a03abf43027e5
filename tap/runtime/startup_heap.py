"""The objects a server process builds at start-up, kept out of the garbage collector's way."""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Take what start-up built (imported modules, the store's and the embedder's objects: ~125k
    objects the garbage collector tracks) out of every later collection. A full collection scans
    every tracked object, and under load one ran every few seconds and held the GIL, the event loop
    included, for 100-230 ms (`./dev bench load`, 64 streams); these objects live as long as the
    process, so scanning them finds nothing."""
    gc.collect()
    gc.freeze()
