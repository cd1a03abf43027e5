"""tap: a conversation-tap memory proxy (see README.md and docs/architecture.md)."""

import os

# numpy's OpenBLAS starts a thread per core for every matrix product and keeps them spinning after
# it: on tap's small products (a scope's vectors against a few queries) that doubled the CPU time
# and took cores from the embedder and the proxy. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
