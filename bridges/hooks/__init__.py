"""Agent hooks: Claude Code's and Codex's lifecycle hooks as a way into tap (docs/protocols.md, Agent hooks).

What each event does (bridges.hooks.hook_session):
- SessionStart: the scope's most important current memories as `additionalContext` (given again
  after a compaction or a clear, when the earlier context is gone);
- UserPromptSubmit: recall for the prompt, same block and budget as the proxy, minus what this
  session was already given (the context a hook adds stays in the transcript);
- Stop / PreCompact / SessionEnd: the transcript lines written since the last offset go to the
  one ingestion entry point, and the session's window is closed into a chunk at once.

Two transports, one policy: `tap hook EVENT` (a process per event: bridges.hooks.command forwards
the stdin JSON to a running `tap serve`, or handles it itself on the embedded store) and Claude
Code's `http` hooks (proxy/hooks_routes.py on `tap serve`). `tap hooks install` writes either into
the agents' settings files (bridges.hooks.install).

Invariant: this package's `__init__` and the modules the command path imports (command, names,
lightconfig, hooklog, deadline, state, and bridges.admin_http) use the standard library, platformdirs (lightconfig: the
user's config and data folders, as tap.config finds them; a few small pure-Python modules) and
tap.sqlite (standard library) only, so a hook process that talks to a server starts in a few tens
of milliseconds (no msgspec, chromadb, onnxruntime; tests/bridges/test_hooks_serve.py checks).
"""
