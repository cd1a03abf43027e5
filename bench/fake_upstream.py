"""A fake Anthropic Messages API upstream for bench/proxy.py, run in its own process.

``python bench/fake_upstream.py PORT_FILE --events N --gap-ms G`` serves ``POST /v1/messages`` on
127.0.0.1 (a free port, written to PORT_FILE): non-streaming requests get a JSON message at once;
streaming ones a realistic SSE stream (message_start, content_block_start, ping, N text deltas,
content_block_stop, message_delta, message_stop), one event per write and G ms between events, as
the API flushes per event. Only aiohttp and the standard library are imported, so it starts fast.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/fake_upstream.py`: testkit/ sits beside bench/
    sys.path.insert(0, str(ROOT))

from testkit.wire import anthropic_message, anthropic_stream, compact  # noqa: E402

WORDS = "Here is a plan for the week that keeps Thursday's release safe and leaves Friday free ".split()


def stream_events(deltas: int) -> list[bytes]:
    """A realistic Anthropic stream with `deltas` text deltas (deterministic bytes)."""
    pieces = [" ".join(WORDS[(2 * i) % len(WORDS) : (2 * i) % len(WORDS) + 2]) + " " for i in range(deltas)]
    usage = {"input_tokens": 812, "output_tokens": 2 * deltas}
    content = [{"type": "text", "text": "".join(pieces)}]
    message = anthropic_message(
        content, usage=usage, stop_reason="end_turn", model="claude-bench", message_id="msg_bench_0001"
    )
    return anthropic_stream(message, pieces=pieces, ping=True)


def message_body() -> bytes:
    """A non-streaming Anthropic message."""
    content = [{"type": "text", "text": "Monday: migration script. Tuesday: fixes. Wednesday: docs."}]
    usage = {"input_tokens": 812, "output_tokens": 17}
    message = anthropic_message(
        content, usage=usage, stop_reason="end_turn", model="claude-bench", message_id="msg_bench_0002"
    )
    return compact(message).encode()


def upstream_main(port_file: Path, deltas: int, gap_ms: float) -> None:
    """Serve the fake Anthropic API until killed; writes the bound port to `port_file`."""
    events = stream_events(deltas)
    body = message_body()

    async def messages(request: web.Request) -> web.StreamResponse:
        payload = await request.json()
        if not payload.get("stream"):
            return web.Response(body=body, content_type="application/json", headers={"request-id": "req_bench"})
        response = web.StreamResponse(headers={"request-id": "req_bench", "Cache-Control": "no-cache"})
        response.content_type = "text/event-stream"
        response.enable_chunked_encoding()
        await response.prepare(request)
        for index, event in enumerate(events):
            if index:
                await asyncio.sleep(gap_ms / 1000)
            await response.write(event)
        await response.write_eof()
        return response

    async def serve() -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", messages)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        await asyncio.to_thread(port_file.write_text, str(runner.addresses[0][1]))
        await asyncio.Event().wait()

    asyncio.run(serve())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("port_file", type=Path)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--gap-ms", type=float, default=15.0)
    args = parser.parse_args()
    upstream_main(args.port_file, args.events, args.gap_ms)


if __name__ == "__main__":
    main()
