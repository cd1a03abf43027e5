"""Process upkeep, one place: tasks, priorities, memory given back, health, counters.

- `tasks`: the only place asyncio tasks are created (named, strongly referenced);
- `priority`: background threads yield to the hot path; `allocator`, `startup_heap`: memory given
  back to the system; `loop_lag`: how late the event loop runs;
- `health`, `metrics`: what `/tap/health` and `/tap/status` report; `repeatlog`: one log line per
  repeated failure.

Imports no stage.
"""
