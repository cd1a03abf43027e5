"""Stage 2, recall (the hot path): the latest human turn → hybrid search → rank → one block of at
most N tokens, within a hard deadline.

- `engine`: `RecallEngine` (query, candidates, scores, packing) and the block's rendering;
- `admission`: the waiting room in front of it (deadlines, BM25-only fallback, shedding);
- `query`: the turn reduced to what the embedder and BM25 can use;
- `excerpt_focus`: verbatim excerpts cut to what the question is about;
- `replaced_turns`: a current statement brings the turn of the value it replaced;
- `why`: the per-request record behind `tap why`;
- `digest`: a scope's essentials for a new agent context (the session-start hook), as a recaller.

Never imports extraction, ingestion or the interception core (pyproject.toml's import contracts).
"""
