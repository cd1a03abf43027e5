"""The `tap` command line, one module per command group (a composition root: it wires adapters).

- `launch`: the console entry point; `tap hook EVENT` is recognised there and starts without the
  heavy imports (an agent runs it on every prompt);
- `main`: the click root group, `serve`, `config check`, and the lazily imported command groups;
- `shared`: the plumbing every command shares (root options, the memory backend, JSON output);
- `admin_client`: the admin API of a running `tap serve` (over bridges.admin_http), which the
  memory commands use instead of the store while a server holds it;
- `memories` (`tap memories …`, `tap recall`), `lifecycle` (consolidate, conflicts, archive,
  `tap why`), `ops` (`tap status`, `tap extract`, `tap ui`), `ingest`, `hooks`, `mcp` (`tap mcp`
  and the MCP server's registration), `mitm` (`tap mitm`, `tap env`), `telegram`.

This package's `__init__` imports nothing: `import tap.cli.launch` must stay cheap.
"""
