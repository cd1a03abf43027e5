"""Stage 1, the interception core: what happens to a chat request before it is forwarded and after
the reply, for every way in that forwards requests (proxy routes, mitmproxy, Telegram, hooks).

- `core`: the `Interceptor` (scope, conversation, recall within the deadline, injection, capture);
- `dialects/`: each API's request rewriting and stream parsing (Anthropic, OpenAI Chat and
  Responses, Ollama);
- `scopes`, `projects`: whose memories a request reads and writes;
- `conversations`: which conversation a request belongs to and the ids of its turns;
- `repeats`: which recalled memories not to inject again, per way in;
- `reply_model`: the port of the Telegram bot's chat model.

Imports recall and ingest; nothing below imports it.
"""
