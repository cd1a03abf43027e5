"""Stage 4, extraction (background, never on the hot path): queued chunks → gate → extractor →
reconcile → store, and later consolidation.

- `worker`: drains the durable queue with retries and dead letters;
- `pipeline`: one chunk through the gate, the extractor (the offline rules or an LLM) and reconcile;
- `reconcile`: add / update / supersede / noop against the scope's most similar memories;
- `remember`: one statement an agent asks tap to keep, through the same reconcile;
- `write_batch`: buffered store writes and a vector cache for the worker;
- `costs`: the cost ledger and the daily budget of LLM calls;
- `status`: the extraction part of `tap status` (light: for a status without a server too);
- `consolidation_plan` (pure) and `consolidation` (applies it): near-duplicates merged, stale
  memories archived.

Never imports the interception core or recall.
"""
