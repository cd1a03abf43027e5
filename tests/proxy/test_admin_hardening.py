"""The admin API under bad input and bad luck: 4xx in its own shape, never a 5xx; the scrubber on
every way into the store; nothing stored breaks a later read; health says what works."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from testkit.upstreams import FakeOllama
from tests.proxy.harness import TapProxy

AUTH = {"Authorization": "Bearer test-token"}
SECRET = "sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3bC5dE0fG"


async def call(
    method: str, url: str, *, body: bytes | None = None, payload: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    data = json.dumps(payload).encode() if payload is not None else body
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, data=data, headers={**AUTH, **(headers or {})}) as response,
    ):
        raw = await response.read()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode("utf-8", "replace")


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "BeArEr"])
async def test_bearer_is_accepted_in_any_case(isolated_home: Path, scheme: str) -> None:
    async with TapProxy(isolated_home) as tap:
        status, _ = await call("GET", tap.url + "/tap/stats", headers={"Authorization": f"{scheme} test-token"})
        wrong, body = await call("GET", tap.url + "/tap/stats", headers={"Authorization": f"{scheme} nope"})
        basic, _ = await call("GET", tap.url + "/tap/stats", headers={"Authorization": "Basic dGVzdC10b2tlbg=="})
    assert (status, wrong, basic) == (200, 401, 401) and "error" in body


@pytest.mark.parametrize(
    ("path", "body", "headers"),
    [
        ("/tap/memories", b"[" * 100_000 + b"]" * 100_000, {}),
        ("/tap/memories", b'{"a":' * 5000 + b"1" + b"}" * 5000, {}),
        ("/tap/recall", b'{"text": "caf\xc3\x28", "scope": "ann"}', {}),
        ("/tap/recall", b'{"text": "\xff\xfe"}', {}),
        (
            "/tap/ingest",
            b'{"scope": "a", "conversation": "c", "source": "hook", "messages": []}',
            {"Content-Encoding": "gzip"},
        ),
        ("/tap/recall", gzip.compress(b'{"text": "x"}', mtime=0), {"Content-Encoding": "zstd"}),
        ("/tap/memories", b'{"scope": "ann", "content": "x", "importance": null, "kind": null}', {}),
        ("/tap/memories", b'{"scope": "", "content": "x"}', {}),
        ("/tap/memories", b'{"scope": "ann", "content": "<private>only this</private>"}', {}),
        ("/tap/memories", b'{"scope": "ann", "content": "x", "importance": true}', {}),
        ("/tap/forget", b'{"scope": ""}', {}),
        ("/tap/forget", b'{"scope": 5}', {}),
        (
            "/tap/ingest",
            b'{"scope": "a", "conversation": "c", "source": "hook", "messages": '
            b'[{"role": "user", "content": "hi", "timestamp": 1e300}]}',
            {},
        ),
        (
            "/tap/ingest",
            b'{"scope": "a", "conversation": "c", "source": "hook", "messages": '
            b'[{"role": "user", "content": "hi", "timestamp": -5}]}',
            {},
        ),
        ("/tap/ingest", b'{"scope": "a", "conversation": "", "source": "hook", "messages": []}', {}),
    ],
)
async def test_bad_input_is_a_400_in_the_admin_shape(
    isolated_home: Path, path: str, body: bytes, headers: dict[str, str]
) -> None:
    async with TapProxy(isolated_home) as tap:
        status, answer = await call("POST", tap.url + path, body=body, headers=headers)
    assert status == (415 if "Content-Encoding" in headers else 400), answer
    assert isinstance(answer, dict) and isinstance(answer["error"], str)


async def test_unknown_routes_and_methods_answer_in_shape(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        missing = await call("GET", tap.url + "/tap/nope")
        method = await call("PUT", tap.url + "/tap/memories")
        ui = await call("POST", tap.url + "/ui")
    assert missing[0] == 404 and "error" in missing[1]
    assert method[0] == ui[0] == 405 and "error" in method[1] and "error" in ui[1]


async def test_a_compressed_request_is_forwarded_as_sent(isolated_home: Path) -> None:
    payload = {"model": "llama3.2", "stream": False, "messages": [{"role": "user", "content": "I live in Porto."}]}
    packed = gzip.compress(json.dumps(payload).encode())
    async with FakeOllama() as llama, TapProxy(isolated_home, ollama=llama.url) as tap:
        status, _ = await call("POST", tap.url + "/api/chat", body=packed, headers={"Content-Encoding": "gzip"})
    assert llama.requests[0].headers["Content-Encoding"] == "gzip" and llama.requests[0].body == packed
    assert status == 400  # the fake upstream cannot read gzip, as Ollama cannot: its 400, not tap's 5xx


async def test_every_way_into_the_store_is_scrubbed(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        added = await call(
            "POST",
            tap.url + "/tap/memories",
            payload={"scope": "ann", "content": f"My key is {SECRET}", "tags": [SECRET]},
        )
        record = {
            "id": "m_imported_1",
            "scope": "ann",
            "content": "the wifi password for the office is Blue-Falcon-77",
            "kind": "fact",
            "importance": 3,
            "context": "passcode: 99120",
        }
        imported = await call("POST", tap.url + "/tap/import", body=json.dumps(record).encode())
        edited = await call("PATCH", tap.url + f"/tap/memories/{added[1]['id']}", payload={"content": "my PIN is 1234"})
        exported = await call("GET", tap.url + "/tap/export")
    assert added[0] == 201 and SECRET not in json.dumps(added[1]) and "[REDACTED]" in added[1]["content"]
    assert imported == (200, {"imported": 1, "unchanged": 0, "errors": []})
    assert edited[0] == 200 and edited[1]["content"] == "my PIN is [REDACTED]"
    dump = str(exported[1])
    assert "Blue-Falcon-77" not in dump and "99120" not in dump and "1234" not in dump and SECRET not in dump


async def test_import_refuses_what_would_break_reads_and_keeps_the_rest(isolated_home: Path) -> None:
    now = time.time()
    good = {"id": "m_ok", "scope": "ann", "content": "Ann keeps bees in Sintra", "created_at": now, "valid_from": now}
    bad = [
        {**good, "id": "m_b1", "importance": None},
        {**good, "id": ""},
        {**good, "id": "m_b3", "valid_from": 1e300},
        {**good, "id": "m_b4", "created_at": -1},
        {**good, "id": "m_b5", "access_count": 2**70},
        {**good, "id": "m_b6", "scope": " "},
        {**good, "id": "m_b7", "content": "<private>all of it</private>"},
    ]
    lines = b"\n".join(json.dumps(r).encode() for r in [*bad, good]) + b"\n{not json\n" + b"[" * 50_000
    async with TapProxy(isolated_home) as tap:
        status, report = await call("POST", tap.url + "/tap/import", body=lines)
        recall = await call("POST", tap.url + "/tap/recall", payload={"text": "Where are the bees?", "scope": "ann"})
        listed = await call("GET", tap.url + "/tap/memories?scope=ann")
    assert status == 200 and report["imported"] == 1
    assert [line for line, _ in report["errors"]] == [1, 2, 3, 4, 5, 6, 7, 9, 10]
    assert recall[0] == 200 and "Sintra" in recall[1]["block"]
    assert [m["id"] for m in listed[1]["memories"]] == ["m_ok"]


async def test_health_reports_store_embedder_and_extractor(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        async with aiohttp.ClientSession() as session, session.get(tap.url + "/tap/health") as response:
            doc = await response.json()
    assert response.status == 200 and doc["status"] == "ok"
    assert doc["checks"]["store"]["ok"] and doc["checks"]["embedder"]["ok"]
    assert doc["checks"]["extractor"]["state"] == "running" and doc["checks"]["extractor"]["dead"] == 0


async def test_dead_letters_can_be_requeued_while_serving(isolated_home: Path) -> None:
    async with TapProxy(isolated_home) as tap:
        assert tap.rt is not None
        queue = tap.rt.queue
        await tap.rt.ingestor.ingest_async(_event("I live in Porto and I work as a nurse at Santa Maria hospital."))
        queue.flush()
        claimed = queue.claim()
        assert claimed is not None
        queue.kill(claimed.chunk.id, "ProviderError: bad key")
        async with aiohttp.ClientSession() as session, session.get(tap.url + "/tap/health") as response:
            degraded = await response.json()
        status, answer = await call("POST", tap.url + "/tap/extract/retry")
        assert (status, answer) == (200, {"requeued": 1})
        assert queue.counts()["dead"] == 0 and queue.counts()["queued"] == 1
    assert degraded["status"] == "degraded" and degraded["checks"]["extractor"]["dead"] == 1


def _event(text: str) -> Any:
    from tap.records import IngestEvent, Message

    return IngestEvent(
        scope="ann", conversation="c", source="hook", messages=[Message(role="user", content=text, id="t1")]
    )
