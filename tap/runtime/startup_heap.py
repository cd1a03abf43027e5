"""The objects a server process builds at start-up, kept out of the garbage collector's way."""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Take what start-up built (imported modules, the store's and the embedder's objects) out of
    every later collection. A full collection scans every tracked object while it holds the GIL,
    the event loop included; these objects live as long as the process, so scanning them finds
    nothing."""
    gc.collect()
    gc.freeze()
