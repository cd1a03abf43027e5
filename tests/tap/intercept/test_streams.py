"""Tee parsers: recorded transcripts split at every size and at every awkward point give one Reply.

The parsers live next to their dialects (tap.intercept.dialects.*_stream) on the shared wire module; they
are reached through the dialect objects of the registry, as the proxy reaches them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator

import msgspec
import pytest

from tap.intercept.dialects import get_dialect
from tap.intercept.dialects.anthropic_stream import AnthropicStream
from tap.intercept.dialects.ollama_stream import OllamaStream
from tap.intercept.dialects.openai_stream import OpenAIStream
from tap.intercept.dialects.wire import LineSplitter, Reply, SSEDecoder, SSEEvent, StreamParser
from testkit.upstreams import load_transcript
from testkit.waits import finishes

TEXT = "Bonjour ! Le café est prêt — 日本語のテキスト and emoji 🎉🙂👩\u200d💻. Let me check the weather.\n"
PARTIAL = "Voilà, à moitié é"

EXPECTED: dict[str, tuple[str, Reply]] = {
    "anthropic_stream.sse": (
        "anthropic",
        Reply(
            text=TEXT,
            model="claude-sonnet-4-5-20250929",
            usage={
                "input_tokens": 472,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 2048,
                "output_tokens": 89,
            },
            stop_reason="tool_use",
            complete=True,
        ),
    ),
    "anthropic_error.sse": (
        "anthropic",
        Reply(
            text=PARTIAL,
            model="claude-sonnet-4-5-20250929",
            usage={"input_tokens": 31, "output_tokens": 1},
            error="Overloaded",
        ),
    ),
    "openai_stream.sse": (
        "openai",
        Reply(
            text=TEXT,
            model="gpt-4o-2024-08-06",
            usage={
                "prompt_tokens": 512,
                "completion_tokens": 41,
                "total_tokens": 553,
                "cache_read_input_tokens": 384,
                "input_tokens": 512,
                "output_tokens": 41,
            },
            stop_reason="tool_calls",
            complete=True,
        ),
    ),
    "openai_error.sse": (
        "openai",
        Reply(
            text=PARTIAL,
            model="gpt-4o-mini",
            error="The server had an error while processing your request. Sorry about that!",
        ),
    ),
    "ollama_chat.ndjson": (
        "ollama_chat",
        Reply(
            text=TEXT,
            model="qwen3:8b",
            usage={"prompt_eval_count": 26, "eval_count": 282, "input_tokens": 26, "output_tokens": 282},
            stop_reason="stop",
            complete=True,
        ),
    ),
    "ollama_generate.ndjson": (
        "ollama_generate",
        Reply(
            text=TEXT,
            model="llama3.2",
            usage={"prompt_eval_count": 26, "eval_count": 259, "input_tokens": 26, "output_tokens": 259},
            stop_reason="stop",
            complete=True,
        ),
    ),
    "ollama_error.ndjson": (
        "ollama_chat",
        Reply(
            text=PARTIAL,
            model="llama3.2",
            error="an error was encountered while running the model: unexpected EOF",
        ),
    ),
}
NAMES = sorted(EXPECTED)


def stream_parser(dialect: str) -> StreamParser:
    return get_dialect(dialect).stream_parser()


def parse_response(dialect: str, body: bytes) -> Reply:
    return get_dialect(dialect).parse_response(body)


def run(dialect: str, pieces: Iterable[bytes]) -> Reply:
    parser = stream_parser(dialect)
    for piece in pieces:
        parser.feed(piece)
    return parser.finish()


def sized(data: bytes, size: int) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


def split_at(data: bytes, points: Iterable[int]) -> list[bytes]:
    cuts = [0, *sorted(set(points)), len(data)]
    return [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]


def variants(name: str) -> list[bytes]:
    """The transcript with LF and with CRLF line endings."""
    data = load_transcript(name)
    return [data, data.replace(b"\n", b"\r\n")]


@pytest.mark.parametrize("name", NAMES)
def test_whole_transcript(name: str) -> None:
    dialect, expected = EXPECTED[name]
    for data in variants(name):
        assert run(dialect, [data]) == expected


SMALL_CHUNKS = 128
"""Chunk sizes up to this are all tried in the everyday loop: they cut every line, and most events,
in several places. The larger ones (a few cuts each, which the random split points cover too) are
the slow sweep that CI runs: trying every size is quadratic in the transcript's length."""


@pytest.mark.parametrize("name", NAMES)
def test_every_small_chunk_size(name: str) -> None:
    dialect, expected = EXPECTED[name]
    for data in variants(name):
        for size in range(1, min(SMALL_CHUNKS, len(data)) + 1):
            assert run(dialect, sized(data, size)) == expected, f"chunk size {size}"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_larger_chunk_size(name: str) -> None:
    dialect, expected = EXPECTED[name]
    for data in variants(name):
        for size in range(SMALL_CHUNKS + 1, len(data) + 1):
            assert run(dialect, sized(data, size)) == expected, f"chunk size {size}"


@pytest.mark.parametrize("name", NAMES)
def test_split_inside_every_multibyte_character_and_crlf(name: str) -> None:
    dialect, expected = EXPECTED[name]
    for data in variants(name):
        awkward = [i for i, byte in enumerate(data) if byte & 0xC0 == 0x80 or data[i - 1 : i] == b"\r"]
        assert awkward, "the transcript must contain multi-byte characters"
        for point in awkward:
            assert run(dialect, split_at(data, [point])) == expected, f"split at byte {point}"


@pytest.mark.parametrize("name", NAMES)
def test_random_split_points(name: str) -> None:
    dialect, expected = EXPECTED[name]
    rng = random.Random(name)
    for data in variants(name):
        for _ in range(300):
            points = rng.sample(range(1, len(data)), rng.randint(1, 40))
            assert run(dialect, split_at(data, points)) == expected


@pytest.mark.parametrize("name", NAMES)
def test_truncated_stream_is_incomplete_and_never_raises(name: str) -> None:
    dialect, expected = EXPECTED[name]
    data = load_transcript(name)
    for cut in range(0, len(data), 7):
        reply = run(dialect, sized(data[:cut], 5))
        assert expected.text.startswith(reply.text)
        assert not reply.complete or cut >= len(data) - 40


@pytest.mark.parametrize("name", NAMES)
def test_garbage_never_raises(name: str) -> None:
    dialect, _ = EXPECTED[name]
    data = bytearray(load_transcript(name))
    rng = random.Random(0)
    for _ in range(300):
        noisy = bytearray(data)
        for _ in range(rng.randint(1, 30)):
            noisy[rng.randrange(len(noisy))] = rng.randrange(256)
        reply = run(dialect, sized(bytes(noisy), rng.randint(1, 50)))
        assert isinstance(reply.text, str)
    assert run(dialect, [bytes(rng.randrange(256) for _ in range(5000))]).text == ""


@pytest.mark.parametrize("dialect", ["anthropic", "openai", "ollama_chat"])
def test_structurally_odd_events_are_skipped(dialect: str) -> None:
    odd = [
        b"data: []\n\n",
        b"data: null\n\n",
        b'data: {"type": 5, "index": "x", "delta": [], "choices": {"a": 1}, "message": "m"}\n\n',
        b'data: {"type":"content_block_delta","index":null,"delta":{"type":"text_delta","text":7}}\n\n',
        b'data: {"choices": [null, 3, {"index": "0", "delta": null}], "usage": [1], "model": 9}\n\n',
        b'{"message": {"content": ["x"]}, "done": "yes", "prompt_eval_count": "many"}\n',
        b'{"message": null, "response": 12, "error": null}\n',
    ]
    reply = run(dialect, odd)
    assert reply.text == "" and not reply.complete and not reply.error


def test_one_huge_line_fed_in_small_chunks_stays_linear() -> None:
    big = "é" * 2_000_000  # 4 MB of UTF-8 in a single SSE data line, fed 16 bytes at a time
    event = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": big}}
    data = b"event: content_block_delta\ndata: " + msgspec.json.encode(event) + b"\n\n"
    # linear: ~1 s; re-joining the growing line per chunk would copy ~500 GB (many minutes): the
    # guard fails that, it times nothing
    reply = finishes(lambda: run("anthropic", sized(data, 16)), what="parsing one 4 MB line in 16-byte chunks")
    assert reply.text == big


def test_many_events_fed_byte_by_byte() -> None:
    line = b'{"model":"m","response":"ab\xc3\xa9","done":false}\n'
    reply = run("ollama_generate", sized(line * 5000, 1))
    assert reply.text == "abé" * 5000


# --- building blocks ----------------------------------------------------------------------------


def test_line_splitter_handles_lf_crlf_bom_and_a_final_unterminated_line() -> None:
    splitter = LineSplitter()
    out = splitter.feed(b"\xef\xbb\xbfone\r")
    out += splitter.feed(b"\ntwo\n\nthr")
    out += splitter.feed(b"ee")
    assert out == ["one", "two", ""]
    assert splitter.flush() == ["three"]
    assert splitter.flush() == []


def test_sse_decoder_fields_comments_and_multiline_data() -> None:
    decoder = SSEDecoder()
    stream = (
        b": comment\n"
        b"event: a\ndata: 1\ndata:2\nid: 7\nretry: 10\n\n"
        b"event: no-data\n\n"
        b"data\n\n"
        b"data:  two spaces\n\n"
        b"event: tail\ndata: x"
    )
    events = decoder.feed(stream)
    assert events == [SSEEvent("a", "1\n2"), SSEEvent("message", ""), SSEEvent("message", " two spaces")]
    assert decoder.flush() == [SSEEvent("tail", "x")]


def anthropic_events(*events: object) -> bytes:
    return b"".join(b"event: x\ndata: " + msgspec.json.encode(e) + b"\n\n" for e in events)


def test_anthropic_text_is_joined_in_block_index_order_and_skips_non_text() -> None:
    data = anthropic_events(
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": "C"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "D"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A"}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{"},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "B"}},
        {"type": "content_block_delta", "index": 3, "delta": {"type": "citations_delta", "citation": {}}},
    )
    assert run("anthropic", [data]).text == "ABCD"


def test_anthropic_usage_merges_message_start_with_cumulative_message_delta() -> None:
    data = anthropic_events(
        {
            "type": "message_start",
            "message": {"model": "m", "usage": {"input_tokens": 10, "output_tokens": 1}},
        },
        {"type": "message_delta", "delta": {"stop_reason": None}, "usage": {"output_tokens": 5}},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    )
    reply = run("anthropic", [data])
    assert reply.usage == {"input_tokens": 10, "output_tokens": 9}
    assert (reply.stop_reason, reply.complete) == ("max_tokens", True)


def test_openai_only_choice_zero_text_and_null_choices_usage_chunk() -> None:
    chunks = [
        {"model": "m", "choices": [{"index": 1, "delta": {"content": "other"}}]},
        {"model": "m", "choices": [{"index": 0, "delta": {"content": "mine", "refusal": "no"}}]},
        {"model": "m", "choices": None, "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    ]
    data = b"".join(b"data: " + msgspec.json.encode(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    reply = run("openai", [data])
    assert reply.text == "mine"
    assert reply.usage == {"prompt_tokens": 3, "completion_tokens": 4, "input_tokens": 3, "output_tokens": 4}
    assert reply.complete


def test_openai_error_may_be_a_plain_string() -> None:
    assert run("openai", [b'data: {"error": "rate limited"}\n\n']).error == "rate limited"


def test_ollama_last_line_without_newline_is_read_at_finish() -> None:
    data = b'{"model":"m","response":"hi","done":false}\n{"model":"m","response":"!","done":true,"eval_count":2}'
    reply = run("ollama_generate", [data])
    assert (reply.text, reply.complete, reply.usage["output_tokens"]) == ("hi!", True, 2)


def test_each_dialect_owns_its_parser() -> None:
    assert isinstance(stream_parser("anthropic"), AnthropicStream)
    assert isinstance(stream_parser("openai"), OpenAIStream)
    assert isinstance(stream_parser("ollama_chat"), OllamaStream)
    assert isinstance(stream_parser("ollama_generate"), OllamaStream)
    with pytest.raises(KeyError):
        stream_parser("gemini")


# --- non-streamed bodies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dialect", "body_file", "stream_file"),
    [
        ("anthropic", "anthropic_message.json", "anthropic_stream.sse"),
        ("openai", "openai_completion.json", "openai_stream.sse"),
        ("ollama_chat", "ollama_chat.json", "ollama_chat.ndjson"),
        ("ollama_generate", "ollama_generate.json", "ollama_generate.ndjson"),
    ],
)
def test_parse_response_agrees_with_the_stream(dialect: str, body_file: str, stream_file: str) -> None:
    assert parse_response(dialect, load_transcript(body_file)) == EXPECTED[stream_file][1]


@pytest.mark.parametrize(
    ("dialect", "body", "error"),
    [
        (
            "anthropic",
            b'{"type":"error","error":{"type":"not_found_error","message":"model: x"}}',
            "model: x",
        ),
        (
            "openai",
            b'{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}',
            "Incorrect API key",
        ),
        ("ollama_chat", b'{"error":"model \\"x\\" not found"}', 'model "x" not found'),
        ("ollama_generate", b'{"error":"boom"}', "boom"),
    ],
)
def test_parse_response_errors(dialect: str, body: bytes, error: str) -> None:
    reply = parse_response(dialect, body)
    assert (reply.error, reply.complete, reply.text) == (error, False, "")


@pytest.mark.parametrize("dialect", ["anthropic", "openai", "ollama_chat", "ollama_generate"])
@pytest.mark.parametrize("body", [b"", b"not json", b"[1,2]", b'{"type":"message","content":7}', b"\xff\xfe"])
def test_parse_response_garbage_never_raises(dialect: str, body: bytes) -> None:
    reply = parse_response(dialect, body)
    assert reply.text == "" and not reply.error


@pytest.mark.parametrize("name", [n for n in NAMES if EXPECTED[n][1].complete])
def test_complete_turns_true_with_the_terminal_event_and_not_before(name: str) -> None:
    dialect, expected = EXPECTED[name]
    data = load_transcript(name)
    terminal = {"anthropic": b"message_stop", "openai": b"[DONE]"}.get(dialect, b'"done":true')
    cut = data.index(terminal)
    parser = stream_parser(dialect)
    parser.feed(data[:cut])
    assert not parser.complete
    parser.feed(data[cut:])
    assert parser.complete and parser.finish() == expected
