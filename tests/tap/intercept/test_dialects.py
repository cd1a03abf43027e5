"""Dialects: reading the human turn, cache-safe injection, error bodies, flags."""

from __future__ import annotations

import copy
import random
from typing import Any

import msgspec
import pytest

from tap.intercept.dialects import (
    ANTHROPIC,
    DIALECTS,
    OLLAMA_CHAT,
    OLLAMA_GENERATE,
    OPENAI,
    ClientIds,
    Dialect,
    HumanTurn,
    PlainMessage,
    get_dialect,
    memory_dialect,
    passthrough_dialect,
)

BLOCK = "<memories>\n- 2026-10-01: the user lives in Zürich (prefers °C)\n</memories>"
CC = {"type": "ephemeral"}
CC_1H = {"type": "ephemeral", "ttl": "1h"}
enc = msgspec.json.encode


def text(t: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": t, **extra}


def tool_result(i: int, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "42 °C", **extra}


IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


def anthropic_req(last_content: Any, **top: Any) -> dict[str, Any]:
    return {
        "model": "claude-haiku-4-5",
        "max_tokens": 1024,
        "system": [text("You are helpful.", cache_control=CC)],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}, "cache_control": CC}],
        "messages": [
            {"role": "user", "content": "Bonjour, je suis à Zürich."},
            {"role": "assistant", "content": [text("Salut ! 日本 🎉")]},
            {"role": "user", "content": last_content},
        ],
        "stream": True,
        **top,
    }


# --- parse_request / encode ---------------------------------------------------------------------


@pytest.mark.parametrize("dialect", list(DIALECTS.values()), ids=list(DIALECTS))
def test_parse_request_rejects_bad_json_and_non_objects(dialect: Dialect) -> None:
    with pytest.raises(ValueError, match="invalid JSON"):
        dialect.parse_request(b'{"model": ')
    with pytest.raises(ValueError, match="JSON object, not an array"):
        dialect.parse_request(b"[1, 2]")
    with pytest.raises(ValueError, match="JSON object, not null"):
        dialect.parse_request(b"null")
    assert dialect.parse_request(b'\xef\xbb\xbf{"model": "m"}') == {"model": "m"}


@pytest.mark.parametrize("dialect", list(DIALECTS.values()), ids=list(DIALECTS))
def test_encode_keeps_key_order_and_round_trips(dialect: Dialect) -> None:
    body = '{"z":1,"model":"m","a":{"y":[1,2.5,"é日🎉"],"b":null},"stream":false}'.encode()
    assert dialect.encode(dialect.parse_request(body)) == body


# --- latest_user_text / human_turn --------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Quel temps fait-il ?", "Quel temps fait-il ?"),
        ([text("one"), IMAGE, text("two", cache_control=CC)], "one\ntwo"),
        ([tool_result(1)], None),
        ([tool_result(1), tool_result(2)], None),
        ([tool_result(1), text("and also this")], "and also this"),
        ([IMAGE], None),
        ("   ", None),
        ([], None),
        (None, None),
        (12, None),
    ],
)
def test_anthropic_latest_user_text(content: Any, expected: str | None) -> None:
    assert ANTHROPIC.latest_user_text(anthropic_req(content)) == expected


@pytest.mark.parametrize(
    "req",
    [
        {},
        {"messages": "nope"},
        {"messages": []},
        {"messages": [None]},
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "prefill"}]},
        {"messages": [{"content": "no role"}]},
    ],
)
@pytest.mark.parametrize("dialect", [ANTHROPIC, OPENAI, OLLAMA_CHAT], ids=["anthropic", "openai", "ollama"])
def test_latest_user_text_is_none_for_malformed_or_non_user_endings(dialect: Dialect, req: Any) -> None:
    assert dialect.latest_user_text(req) is None


def test_openai_latest_user_text() -> None:
    base = [{"role": "system", "content": "sys"}, {"role": "user", "content": "first"}]
    parts = [text("look"), {"type": "image_url", "image_url": {"url": "data:,"}}, text("here")]
    assert OPENAI.latest_user_text({"messages": base}) == "first"
    assert OPENAI.latest_user_text({"messages": [*base[:1], {"role": "user", "content": parts}]}) == "look\nhere"
    tool_turn = [*base, {"role": "assistant", "tool_calls": []}, {"role": "tool", "content": "42"}]
    assert OPENAI.latest_user_text({"messages": tool_turn}) is None
    assert OPENAI.human_turn({"messages": tool_turn}) == HumanTurn(1, "first", tool_step=True)


def test_ollama_latest_user_text_and_human_turn() -> None:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": ""},
        {"role": "user", "content": "a"},
    ]
    assert OLLAMA_CHAT.latest_user_text({"messages": msgs}) == "a"
    assert OLLAMA_CHAT.latest_user_text({"messages": [*msgs, {"role": "tool", "content": "42"}]}) is None
    step = {
        "messages": [*msgs, {"role": "assistant", "content": "", "tool_calls": []}, {"role": "tool", "content": "4"}]
    }
    assert OLLAMA_CHAT.human_turn(step) == HumanTurn(2, "a", tool_step=True)


def test_ollama_generate_prompt_is_the_turn_unless_raw_or_fill_in_the_middle() -> None:
    assert OLLAMA_GENERATE.latest_user_text({"prompt": "Why is the sky blue?"}) == "Why is the sky blue?"
    assert OLLAMA_GENERATE.latest_user_text({"prompt": "[INST] hi [/INST]", "raw": True}) is None
    assert OLLAMA_GENERATE.latest_user_text({"prompt": "def f(", "suffix": "    return x"}) is None
    assert OLLAMA_GENERATE.latest_user_text({"prompt": ""}) is None
    assert OLLAMA_GENERATE.latest_user_text({}) is None


def test_anthropic_tool_step_finds_the_human_turn_it_works_on() -> None:
    assert ANTHROPIC.human_turn(anthropic_req("next question")) == HumanTurn(2, "next question", tool_step=False)
    assert ANTHROPIC.human_turn(anthropic_req([tool_result(3)])) == HumanTurn(0, "Bonjour, je suis à Zürich.", True)
    assert ANTHROPIC.human_turn(anthropic_req([tool_result(3), text("stop, use °F")])) == HumanTurn(
        2, "stop, use °F", False
    )
    assert ANTHROPIC.human_turn(anthropic_req([IMAGE])) is None
    only_tools = {"messages": [{"role": "user", "content": [tool_result(1)]}]}
    assert ANTHROPIC.human_turn(only_tools) is None
    assert ANTHROPIC.human_turn({"messages": []}) is None


def test_system_messages_after_the_newest_turn_belong_to_no_turn() -> None:
    notes = {"role": "system", "content": [text("# Environment\ncwd: /repo", cache_control=CC)]}
    first = {
        "messages": [{"role": "user", "content": [text("<system-reminder>x</system-reminder>"), text("hi")]}, notes]
    }
    assert ANTHROPIC.human_turn(first) == HumanTurn(0, "<system-reminder>x</system-reminder>\nhi", tool_step=False)
    step = anthropic_req([tool_result(3)])
    step["messages"].append(notes)
    assert ANTHROPIC.human_turn(step) == HumanTurn(0, "Bonjour, je suis à Zürich.", tool_step=True)
    after_reply = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Sure"}, notes]}
    assert ANTHROPIC.human_turn(after_reply) is None
    assert ANTHROPIC.human_turn({"messages": [notes]}) is None
    developer = {"role": "developer", "content": "d"}
    assert OPENAI.human_turn({"messages": [{"role": "user", "content": "q"}, developer]}) == HumanTurn(0, "q", False)


def test_anthropic_block_goes_into_the_human_message_before_trailing_system_notes() -> None:
    notes = {"role": "system", "content": [text("# Environment", cache_control=CC)], "output_config": {"effort": "low"}}
    req = {"messages": [{"role": "user", "content": [text("hi")]}, notes], "cache_control": CC}
    out = ANTHROPIC.inject(req, BLOCK)
    assert out["messages"][0]["content"] == [text("hi"), text(BLOCK)]
    assert out["messages"][1] is notes  # the system turn is shared, untouched
    assert out["cache_control"] == CC  # the automatic breakpoint is on the notes, after the block already
    step = anthropic_req([tool_result(1)])
    step["messages"].append(notes)
    assert ANTHROPIC.inject(step, BLOCK)["messages"][2]["content"] == [tool_result(1), text(BLOCK)]
    with pytest.raises(ValueError, match="not a user message"):
        ANTHROPIC.inject({"messages": [{"role": "assistant", "content": "x"}, notes]}, BLOCK)


def test_openai_and_ollama_blocks_go_before_trailing_system_messages() -> None:
    tail = [{"role": "developer", "content": "d"}, {"role": "system", "content": "s"}]
    out = OPENAI.inject({"messages": [{"role": "user", "content": "q"}, *tail]}, BLOCK)
    assert out["messages"] == [{"role": "user", "content": [text("q"), text(BLOCK)]}, *tail]
    tools = [{"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]}, {"role": "tool", "content": "4"}]
    step = OPENAI.inject({"messages": [{"role": "user", "content": "q"}, *tools, *tail]}, BLOCK)
    assert step["messages"] == [{"role": "user", "content": "q"}, *tools, {"role": "user", "content": BLOCK}, *tail]
    system = {"role": "system", "content": "s"}
    ollama = OLLAMA_CHAT.inject({"messages": [{"role": "user", "content": "q"}, system]}, BLOCK)
    assert ollama["messages"] == [{"role": "user", "content": "q\n\n" + BLOCK}, system]


# --- Anthropic injection ------------------------------------------------------------------------


def test_anthropic_string_content_becomes_original_block_then_memory_block() -> None:
    req = anthropic_req("Quel temps fait-il ?")
    out = ANTHROPIC.inject(req, BLOCK)
    assert out["messages"][-1] == {"role": "user", "content": [text("Quel temps fait-il ?"), text(BLOCK)]}


def test_anthropic_block_list_keeps_client_cache_control_and_appends_after_it() -> None:
    original = [text("ctx", cache_control=CC_1H), IMAGE, text("Question?", cache_control=CC)]
    out = ANTHROPIC.inject(anthropic_req(original), BLOCK)
    assert out["messages"][-1]["content"] == [*original, text(BLOCK)]
    assert "cache_control" not in out["messages"][-1]["content"][-1]


def test_anthropic_top_level_cache_control_moves_to_last_original_block() -> None:
    req = anthropic_req([text("a"), text("b")], cache_control=CC_1H)
    out = ANTHROPIC.inject(req, BLOCK)
    assert "cache_control" not in out
    assert out["messages"][-1]["content"] == [text("a"), text("b", cache_control=CC_1H), text(BLOCK)]
    assert list(out) == [k for k in req if k != "cache_control"]


def test_anthropic_top_level_cache_control_with_string_content() -> None:
    out = ANTHROPIC.inject(anthropic_req("q", cache_control=CC), BLOCK)
    assert "cache_control" not in out
    assert out["messages"][-1]["content"] == [text("q", cache_control=CC), text(BLOCK)]


def test_anthropic_top_level_cache_control_keeps_an_existing_block_breakpoint() -> None:
    out = ANTHROPIC.inject(anthropic_req([text("q", cache_control=CC)], cache_control=CC_1H), BLOCK)
    assert "cache_control" not in out
    assert out["messages"][-1]["content"] == [text("q", cache_control=CC), text(BLOCK)]


def test_anthropic_top_level_cache_control_stays_when_there_is_no_original_block() -> None:
    out = ANTHROPIC.inject(anthropic_req("", cache_control=CC), BLOCK)
    assert out["cache_control"] == CC
    assert out["messages"][-1]["content"] == [text(BLOCK)]


def test_anthropic_tool_result_turn_gets_the_block_after_the_results() -> None:
    req = anthropic_req([tool_result(1), tool_result(2, cache_control=CC)])
    assert ANTHROPIC.latest_user_text(req) is None  # the proxy skips it; inject still works
    out = ANTHROPIC.inject(req, BLOCK)
    assert out["messages"][-1]["content"] == [tool_result(1), tool_result(2, cache_control=CC), text(BLOCK)]


@pytest.mark.parametrize("dialect", [ANTHROPIC, OPENAI, OLLAMA_CHAT], ids=["anthropic", "openai", "ollama"])
def test_inject_refuses_when_the_last_message_is_not_from_the_user(dialect: Dialect) -> None:
    prefill = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Sure"}]}
    with pytest.raises(ValueError, match="not a user message"):
        dialect.inject(prefill, BLOCK)
    with pytest.raises(ValueError, match="not a user message"):
        dialect.inject({"messages": []}, BLOCK)


@pytest.mark.parametrize("dialect", list(DIALECTS.values()), ids=list(DIALECTS))
def test_inject_refuses_an_empty_block(dialect: Dialect) -> None:
    with pytest.raises(ValueError, match="empty"):
        dialect.inject({"messages": [{"role": "user", "content": "hi"}], "prompt": "hi"}, " \n")


# --- OpenAI and Ollama injection -----------------------------------------------------------------


def test_openai_string_and_list_content() -> None:
    req: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": [{"role": "developer", "content": "d"}, {"role": "user", "content": "q"}],
    }
    out = OPENAI.inject(req, BLOCK)
    assert out["messages"][-1] == {"role": "user", "content": [text("q"), text(BLOCK)]}
    parts = [text("look"), {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}]
    req["messages"][-1]["content"] = parts
    assert OPENAI.inject(req, BLOCK)["messages"][-1]["content"] == [*parts, text(BLOCK)]


def test_ollama_chat_appends_to_the_string_content() -> None:
    msg = {"role": "user", "content": "Pourquoi ?", "images": ["iVBORw0KGgo="]}
    out = OLLAMA_CHAT.inject({"model": "llama3.2", "messages": [msg]}, BLOCK)
    assert out["messages"][-1] == {**msg, "content": "Pourquoi ?\n\n" + BLOCK}
    empty = OLLAMA_CHAT.inject({"messages": [{"role": "user", "content": ""}]}, BLOCK)
    assert empty["messages"][-1]["content"] == BLOCK
    with pytest.raises(ValueError):
        OLLAMA_CHAT.inject({"messages": [{"role": "user", "content": [text("x")]}]}, BLOCK)


def test_ollama_generate_appends_to_the_prompt() -> None:
    req = {"model": "llama3.2", "prompt": "Pourquoi le ciel est bleu ?", "system": "s", "stream": False}
    out = OLLAMA_GENERATE.inject(req, BLOCK)
    assert out == {**req, "prompt": "Pourquoi le ciel est bleu ?\n\n" + BLOCK}
    assert list(out) == list(req)
    assert OLLAMA_GENERATE.inject({"model": "m"}, BLOCK)["prompt"] == BLOCK


# --- the cache-safety property ------------------------------------------------------------------


def random_block(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["text", "text", "image", "tool_result", "document"])
    block: dict[str, Any] = {
        "text": text(rng.choice(["é", "日本語", "🎉 ok", "plain words", '\n\t"quoted"'])),
        "image": IMAGE,
        "tool_result": tool_result(rng.randrange(9)),
        "document": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "d"}},
    }[kind]
    if rng.random() < 0.3:
        block = {**block, "cache_control": rng.choice([CC, CC_1H])}
    return block


def random_content(rng: random.Random, *, openai: bool) -> Any:
    if rng.random() < 0.35:
        return rng.choice(["Quel temps ?", "日本 🎉", "x"])
    blocks = [random_block(rng) for _ in range(rng.randint(1, 5))]
    return ([b for b in blocks if b["type"] == "text"] or [text("t")]) if openai else blocks


def random_request(rng: random.Random, *, openai: bool) -> dict[str, Any]:
    roles = ["user", "assistant"] * rng.randint(0, 3)
    messages = [{"role": r, "content": random_content(rng, openai=openai)} for r in roles]
    messages.append({"role": "user", "content": random_content(rng, openai=openai), "name": "ann"})
    req: dict[str, Any] = {"model": "m", "max_tokens": 100}
    if not openai:
        req["system"] = rng.choice(["You are kind.", [text("sys", cache_control=CC)]])
        req["tools"] = [{"name": "t", "input_schema": {"type": "object"}}]
        if rng.random() < 0.4:
            req["cache_control"] = rng.choice([CC, CC_1H])
    req["messages"] = messages
    req["temperature"] = 0.5
    return req


def as_blocks(content: Any) -> list[Any]:
    return [text(content)] if isinstance(content, str) else list(content)


def without_moved_cache_control(req: dict[str, Any], new_blocks: list[Any], n_original: int) -> list[Any]:
    """The new message's original blocks, undoing the documented top-level cache_control move."""
    blocks = list(new_blocks[:n_original])
    last_orig = as_blocks(req["messages"][-1]["content"])[-1]
    if "cache_control" in req and "cache_control" not in last_orig:
        assert blocks[-1]["cache_control"] == req["cache_control"]
        blocks[-1] = {k: v for k, v in blocks[-1].items() if k != "cache_control"}
    return blocks


@pytest.mark.parametrize("dialect", [ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def test_inject_keeps_everything_but_the_appended_block_byte_identical(dialect: Dialect) -> None:
    rng = random.Random(dialect.name)
    for _ in range(500):
        req = random_request(rng, openai=dialect is OPENAI)
        before, snapshot = enc(req), copy.deepcopy(req)
        out = dialect.inject(req, BLOCK)
        assert enc(req) == before and req == snapshot  # the input is not mutated
        assert enc(dialect.inject(dialect.parse_request(before), BLOCK)) == enc(out)  # deterministic
        kept = [k for k in req if k not in ("messages", "cache_control")]
        assert [k for k in out if k != "messages"] == kept
        assert all(enc(out[k]) == enc(req[k]) for k in kept)  # system, tools, params
        assert enc(out["messages"][:-1]) == enc(req["messages"][:-1])  # earlier messages
        last, new_last = req["messages"][-1], out["messages"][-1]
        assert {k: v for k, v in new_last.items() if k != "content"} == {
            k: v for k, v in last.items() if k != "content"
        }
        original = as_blocks(last["content"])
        assert new_last["content"][-1] == text(BLOCK)
        assert len(new_last["content"]) == len(original) + 1
        restored = without_moved_cache_control(req, new_last["content"], len(original))
        assert enc(restored) == enc(original)  # original blocks are a byte-identical prefix


def test_ollama_inject_keeps_the_original_text_as_a_prefix() -> None:
    rng = random.Random(3)
    for _ in range(200):
        msgs = [{"role": rng.choice(["system", "user", "assistant"]), "content": rng.choice(["é", "日本", ""])}]
        req: dict[str, Any] = {
            "model": "m",
            "messages": [*msgs, {"role": "user", "content": rng.choice(["🎉", "q", ""])}],
        }
        before = enc(req)
        out = OLLAMA_CHAT.inject(req, BLOCK)
        assert enc(req) == before
        assert enc(out["messages"][:-1]) == enc(req["messages"][:-1])
        original = req["messages"][-1]["content"]
        assert out["messages"][-1]["content"] == (f"{original}\n\n{BLOCK}" if original else BLOCK)


# --- errors, model, streaming, registry ---------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "invalid_request_error"), (404, "not_found_error"), (502, "api_error"), (504, "timeout_error")],
)
def test_anthropic_error_body(status: int, kind: str) -> None:
    body, content_type = ANTHROPIC.error_body(status, "upstream unreachable: é")
    assert content_type == "application/json"
    assert msgspec.json.decode(body) == {
        "type": "error",
        "error": {"type": kind, "message": "upstream unreachable: é"},
    }


def test_openai_and_ollama_error_bodies() -> None:
    body, content_type = OPENAI.error_body(502, "bad gateway")
    assert content_type == "application/json"
    expected = {"message": "bad gateway", "type": "server_error", "param": None, "code": None}
    assert msgspec.json.decode(body) == {"error": expected}
    assert msgspec.json.decode(OPENAI.error_body(400, "x")[0])["error"]["type"] == "invalid_request_error"
    for dialect in (OLLAMA_CHAT, OLLAMA_GENERATE):
        assert dialect.error_body(504, "timed out") == (b'{"error":"timed out"}', "application/json")


@pytest.mark.xdist_group("sdk")  # imports the SDK: with the other tests that do (tests/sdk.py)
def test_anthropic_error_body_is_understood_by_the_sdk() -> None:
    anthropic = pytest.importorskip("anthropic")
    import httpx

    body, content_type = ANTHROPIC.error_body(504, "upstream timed out")
    request = httpx.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx.Response(504, content=body, headers={"content-type": content_type}, request=request)
    client = anthropic.Anthropic(api_key="sk-test", base_url="http://127.0.0.1:9")
    error = client._make_status_error_from_response(response)
    assert error.status_code == 504 and "upstream timed out" in str(error)


def test_model_and_streaming_flags() -> None:
    assert ANTHROPIC.model_of({"model": "claude-haiku-4-5"}) == "claude-haiku-4-5"
    assert OPENAI.model_of({"model": 3}) == "" and OPENAI.model_of({}) == ""
    dialect: Dialect
    for dialect in (ANTHROPIC, OPENAI):
        assert not dialect.is_streaming({}) and not dialect.is_streaming({"stream": None})
        assert dialect.is_streaming({"stream": True}) and not dialect.is_streaming({"stream": False})
    for dialect in (OLLAMA_CHAT, OLLAMA_GENERATE):
        assert dialect.is_streaming({}) and dialect.is_streaming({"stream": True})
        assert dialect.is_streaming({"stream": None})
        assert not dialect.is_streaming({"stream": False})


def test_registry() -> None:
    assert set(DIALECTS) == {"anthropic", "openai", "openai_responses", "ollama_chat", "ollama_generate"}
    assert all(get_dialect(name).name == name for name in DIALECTS)
    with pytest.raises(KeyError, match="unknown dialect 'gemini'"):
        get_dialect("gemini")


def test_registry_maps_paths_to_dialects() -> None:
    assert memory_dialect("/v1/messages") is ANTHROPIC and memory_dialect("/api/generate") is OLLAMA_GENERATE
    assert memory_dialect("/v1/messages/count_tokens") is None
    assert passthrough_dialect("/v1/messages/count_tokens", {}) is ANTHROPIC
    assert passthrough_dialect("/v1/models", {"anthropic-version": "2023-06-01"}) is ANTHROPIC
    assert passthrough_dialect("/v1/models", {}) is OPENAI
    assert passthrough_dialect("/api/tags", {}) is OLLAMA_CHAT
    assert {d.upstream for d in DIALECTS.values()} == {"anthropic", "openai", "ollama"}


# --- transcripts, client ids, tool-step injection -------------------------------------------------


def test_anthropic_transcript_ignores_what_clients_move_and_matches_the_streamed_reply() -> None:
    req = anthropic_req([tool_result(1, cache_control=CC)])
    req["messages"][1]["content"] = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        text("Salut ", cache_control=CC),
        text("!"),
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Zürich"}},
    ]
    said = ANTHROPIC.transcript(req)
    assert said == [
        PlainMessage("user", "Bonjour, je suis à Zürich."),
        PlainMessage("assistant", "Salut !"),  # text blocks joined as the tee parser joins a streamed reply
        PlainMessage("tool", "", "[tool_result toolu_1]42 °C"),
    ]
    unmarked = copy.deepcopy(req)
    unmarked["messages"][2]["content"][0].pop("cache_control")
    unmarked["messages"][1]["content"][1].pop("cache_control")
    assert ANTHROPIC.transcript(unmarked) == said
    assert ANTHROPIC.system_text(req) == "You are helpful."


def test_openai_and_ollama_transcripts() -> None:
    messages = [
        {"role": "developer", "content": "d"},
        {"role": "user", "content": [text("look"), {"type": "image_url", "image_url": {"url": "data:,"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
    ]
    assert OPENAI.transcript({"messages": messages}) == [
        PlainMessage("system", "d"),
        PlainMessage("user", "look", "[image_url]"),
        PlainMessage("assistant", ""),
        PlainMessage("tool", "", "[tool call_1]42"),
    ]
    ollama = [{"role": "user", "content": "q", "images": ["iVBOR"]}, {"role": "tool", "content": "4", "tool_name": "f"}]
    assert OLLAMA_CHAT.transcript({"messages": ollama}) == [
        PlainMessage("user", "q", "[images]"),
        PlainMessage("tool", "", "[tool f]4"),
    ]
    assert OLLAMA_GENERATE.transcript({"prompt": "p", "raw": True}) == [PlainMessage("user", "", "[raw]")]


def test_client_ids() -> None:
    legacy = "user_9f_account_6c2a_session_0a1b2c3d-1111-2222-3333-444455556666"
    assert ANTHROPIC.client_ids({"metadata": {"user_id": legacy}}) == ClientIds(
        "0a1b2c3d-1111-2222-3333-444455556666", legacy
    )
    as_json = '{"device_id":"d1","account_uuid":"","session_id":"5e1f0c4e-aaaa"}'
    assert ANTHROPIC.client_ids({"metadata": {"user_id": as_json}}).session == "5e1f0c4e-aaaa"
    assert ANTHROPIC.client_ids({"metadata": {"user_id": "ann"}}) == ClientIds("", "ann")
    assert ANTHROPIC.client_ids({"metadata": {"user_id": "{broken"}}).session == ""
    assert OPENAI.client_ids({"user": "ann", "prompt_cache_key": "k1"}) == ClientIds("", "user=ann&prompt_cache_key=k1")
    assert OLLAMA_CHAT.client_ids({"messages": []}) == ClientIds()


@pytest.mark.parametrize("dialect", [OPENAI, OLLAMA_CHAT], ids=["openai", "ollama"])
def test_a_tool_step_gets_the_block_as_one_user_message_after_the_tools(dialect: Dialect) -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ]
    req = {"model": "m", "messages": messages}
    before = enc(req)
    out = dialect.inject(req, BLOCK)
    assert enc(req) == before
    assert out["messages"] == [*messages, {"role": "user", "content": BLOCK}]
    assert enc(out["messages"][:-1]) == enc(messages)
