"""What the tests (tests/) and the benchmarks (bench/) share: the things they run tap against.

- `fakes`: fast fakes behind tap's ports (a hashing embedder, an in-memory store), held to the
  same contract tests as the real adapters;
- `upstreams` (and `wire`, the bodies they send): fake Anthropic, OpenAI and Ollama APIs on
  loopback; `fake_telegram`: a fake Telegram Bot API;
- `serve_process`: a real `tap serve` process; `chroma_server`: a real Chroma server;
- `agent_hooks`: agent hook payloads and transcripts, and `tap hook` run as the agents run it;
- `fuzzer` and `fuzz_target`: malformed requests against the whole app;
- `waits`: waiting on a condition, never on a sleep.

Not part of tap: the wheel ships tap, proxy, store and bridges only.
"""
