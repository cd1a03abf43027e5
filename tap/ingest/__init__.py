"""Stage 3, ingestion: every way in hands its turns to one entry point, which makes them durable.

- `entry`: `Ingestor.ingest`, the one entry point (one event shape, `IngestEvent`);
- `capture`: a forwarded exchange → the turn log → the entry point;
- `chunker`: turns (scrubbed) and the overlapping chunks extraction reads;
- `queue`: the durable extraction queue (SQLite): a crash loses no acknowledged chunk;
- `retention`: how long conversation text no longer needed is kept.

Imports no later stage and no language heuristics.
"""
