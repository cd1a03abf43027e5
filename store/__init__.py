"""Adapters for what the core calls out to, behind the ports of tap.ports (docs/architecture.md, Layers).

The database (chroma: every store port, with the FTS5 lexical index; replica: the recall
process's read view; read_view: the CLI's, without a server), the embedders (onnx_embedder, ollama_embedder: `Embedder`;
embedders.make_embedder picks one) and the language models (llm/: `LLMProvider` and `ReplyModel`
over the Anthropic and Ollama SDKs). Of tap's code only the
composition roots (tap.cli, tap.wiring) import this package; the core and the other adapters
never do.
"""
