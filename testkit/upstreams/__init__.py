"""The fake LLM servers of the tests: real HTTP on 127.0.0.1:0, speaking the real wire formats.

One family: `FakeUpstream` (server.py) holds the lifecycle, the request log and the scripted
replies; `FakeAnthropic`, `FakeOpenAI` and `FakeOllama` add their dialect's routes, error shapes
and reply helpers; the bodies they build come from testkit/wire.py (which bench/fake_upstream.py,
the benchmark's upstream in its own process, builds its stream with too).
"""

from testkit.upstreams.anthropic import FakeAnthropic, credential
from testkit.upstreams.ollama import FakeOllama, embedding
from testkit.upstreams.openai import FakeOpenAI
from testkit.upstreams.server import (
    AWKWARD_CHUNKS,
    CONTENT_TYPES,
    FakeUpstream,
    RecordedRequest,
    Scripted,
    chunks,
    load_transcript,
    streaming,
)

__all__ = [
    "AWKWARD_CHUNKS",
    "CONTENT_TYPES",
    "FakeAnthropic",
    "FakeOllama",
    "FakeOpenAI",
    "FakeUpstream",
    "RecordedRequest",
    "Scripted",
    "chunks",
    "credential",
    "embedding",
    "load_transcript",
    "streaming",
]
