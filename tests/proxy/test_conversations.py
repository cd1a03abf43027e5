"""Conversations through the proxy: every turn gets its block, strangers never share an id, a chat
keeps its id across turns, retries and restarts, and only memories the model can already see in
the request are left out.

Clients are the real anthropic SDK (streaming) against a loopback fake that answers every request
with a reply of its own, so two chats diverge at their first reply as real ones do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from tap.ingest.capture import Exchange
from tap.intercept.conversations import fingerprint, turn_key
from tap.intercept.dialects import ANTHROPIC, PlainMessage
from testkit.upstreams import load_transcript
from tests.proxy.harness import TapProxy
from tests.proxy.loop_upstreams import ChattyAnthropic
from tests.sdk import sdk

if TYPE_CHECKING:
    import anthropic
else:
    anthropic = sdk("anthropic")

SISTER = "The user's sister Marta lives in Porto and loves sailing"
MARINA = "Porto marina berths cost 30 euros a night for visiting boats"


class Client:
    """A chat client that keeps its own history (without tap's blocks, which it never sees)."""

    def __init__(self, url: str, **extra: Any) -> None:
        self.sdk = anthropic.AsyncAnthropic(base_url=url, api_key="sk-ant-conv", max_retries=0)
        self.extra = extra
        self.history: list[dict[str, Any]] = []

    async def say(self, text: str) -> str:
        self.history.append({"role": "user", "content": text})
        async with self.sdk.messages.stream(
            model="claude-haiku-4-5", max_tokens=128, messages=self.history, **self.extra
        ) as stream:
            reply = await stream.get_final_text()
        self.history.append({"role": "assistant", "content": reply})
        return reply

    async def close(self) -> None:
        await self.sdk.close()


def block_of(request_json: dict[str, Any]) -> str:
    content = request_json["messages"][-1]["content"]
    return "" if isinstance(content, str) or len(content) < 2 else str(content[-1]["text"])


def exchanges(tap: TapProxy) -> list[Exchange]:
    assert tap.turn_log is not None
    return sorted(tap.turn_log.recent(limit=100), key=lambda e: e.started_at)  # captures finish in any order


async def test_a_memory_relevant_to_turns_one_and_three_is_in_both_blocks(isolated_home: Path) -> None:
    async with ChattyAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        tap.remember(SISTER, importance=4)
        tap.remember(MARINA)
        chat = Client(tap.url)
        await chat.say("Any ideas for a birthday gift for my sister Marta?")
        await chat.say("Also, what's a quick pasta recipe for tonight?")
        await chat.say("Should Marta take her sailing boat to Porto's marina?")
        await chat.close()
        await tap.settle()
        logged = exchanges(tap)
    first, _, third = (block_of(r.json()) for r in up.requests)
    assert SISTER in first and SISTER in third  # proxy injection is ephemeral: repeat it
    assert MARINA not in first and MARINA in third  # each human turn gets its own recall
    assert len({e.conversation for e in logged}) == 1 and len(logged) == 3


async def test_two_chats_opening_with_hello_are_two_conversations(isolated_home: Path) -> None:
    async with ChattyAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        ann, bob = Client(tap.url), Client(tap.url)
        await ann.say("hello")
        await bob.say("hello")
        await ann.say("I live in Porto")
        await bob.say("I live in Oslo")
        await ann.say("and I sail")
        for chat in (ann, bob):
            await chat.close()
        await tap.settle()
        logged = exchanges(tap)
    assert up.requests[0].body == up.requests[1].body  # the same opening request, byte for byte
    by_text = {e.user_text: e.conversation for e in logged if e.user_text != "hello"}
    hellos = [e.conversation for e in logged if e.user_text == "hello"]
    assert hellos[0] != hellos[1]
    assert by_text["I live in Porto"] == by_text["and I sail"] == hellos[0]
    assert by_text["I live in Oslo"] == hellos[1]


async def test_a_retry_after_a_broken_stream_keeps_the_conversation(isolated_home: Path) -> None:
    async with ChattyAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        chat = Client(tap.url)
        up.next_response(transcript="anthropic_stream.sse", drop_after=300)
        try:
            await chat.say("hello, please remember my tea order")
        except Exception:  # the stream broke mid-body: the client gives up on it and sends it again
            chat.history.pop()
        await chat.say("hello, please remember my tea order")
        await chat.say("it is a flat white, actually")
        await chat.close()
        await tap.settle()
        logged = exchanges(tap)
    assert [e.complete for e in logged] == [False, True, True]
    assert len({e.conversation for e in logged}) == 1


async def test_a_restart_keeps_a_running_chat_whole(isolated_home: Path) -> None:
    async with ChattyAnthropic() as up:
        async with TapProxy(isolated_home, anthropic=up.url) as tap:
            chat = Client(tap.url)
            await chat.say("hello, I just moved to Lisbon")
            await chat.close()
            await tap.settle()
            before = exchanges(tap)[-1].conversation
        async with TapProxy(isolated_home, anthropic=up.url) as tap:
            chat.sdk = anthropic.AsyncAnthropic(base_url=tap.url, api_key="sk-ant-conv", max_retries=0)
            await chat.say("what should I see first?")
            await chat.close()
            await tap.settle()
            after = exchanges(tap)[-1].conversation
    assert after == before


async def test_only_memories_visible_in_the_request_are_left_out(isolated_home: Path) -> None:
    opening = "I adopted a greyhound called Pastel and she loves agility"
    async with ChattyAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        chat = Client(tap.url)
        await chat.say(opening)
        await tap.settle()
        conversation = exchanges(tap)[-1].conversation
        from_this_chat = "The user adopted Pastel, a greyhound who loves agility"
        tap.remember(from_this_chat, conversation=conversation, sources=[turn_key(conversation, 1, opening)])
        tap.remember("Pastel the greyhound trains agility on Saturday mornings")
        tap.remember("I adopted a greyhound called Pastel")  # its text is in the request
        await chat.say("When is Pastel's agility training?")
        other = Client(tap.url)
        await other.say("When is Pastel's agility training?")
        for client in (chat, other):
            await client.close()
        await tap.settle()
    same_chat, new_chat = (block_of(r.json()) for r in up.requests[1:])
    assert "Saturday mornings" in same_chat and "Saturday mornings" in new_chat
    assert from_this_chat not in same_chat  # its source turn is in this request's history
    assert from_this_chat in new_chat  # another chat cannot see it
    assert "- I adopted a greyhound called Pastel\n" not in same_chat + "\n"


async def test_a_reply_is_settled_before_its_stream_ends(isolated_home: Path) -> None:
    """The client may send its next request as soon as it saw the terminal event: continuity must
    already be remembered then, not only once the upstream closes the stream."""
    transcript = load_transcript("anthropic_stream.sse")
    request = {"model": "m", "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hello"}]}
    reply_text = ANTHROPIC.parse_response(load_transcript("anthropic_message.json")).text
    key = fingerprint("p", "default", "", [*ANTHROPIC.transcript(request), PlainMessage("assistant", reply_text)])
    async with ChattyAnthropic() as up, TapProxy(isolated_home, anthropic=up.url) as tap:
        up.next_response(transcript="anthropic_stream.sse", hang_after=len(transcript))
        headers = {"x-api-key": "sk-ant-conv", "anthropic-version": "2023-06-01"}
        async with aiohttp.ClientSession() as session:
            response = await session.post(tap.url + "/v1/messages", json=request, headers=headers)
            seen = b""
            while b"message_stop" not in seen:
                seen += await response.content.readany()
            assert not response.content.at_eof()
            remembered = tap.ctx.interceptor.conversations.lookup(key)
            response.close()
        up.end_hangs()  # tap's forwarding of the hanging stream ends before tap shuts down
    assert remembered is not None and remembered.startswith("c-")
