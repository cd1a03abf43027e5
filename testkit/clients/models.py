"""Fake model APIs for the agent CLIs: every answer is finished text, so an agent ends its turn.

The default fakes (tests/upstreams) replay a reply with a tool call, which an agent CLI answers with
a tool result, and so on: these reply with plain text (`end_turn`) instead. They record every
request as the other fakes do.
"""

from __future__ import annotations

from testkit.upstreams import FakeAnthropic, FakeOpenAI


class AgentAnthropic(FakeAnthropic):
    """Anthropic Messages: a text-only reply, streamed or not."""

    stream_file = "anthropic_text_stream.sse"
    message_file = "anthropic_text_message.json"


class AgentOpenAI(FakeOpenAI):
    """OpenAI: the Responses replies are text only already (testkit/data/openai_responses.sse)."""
