"""A seeded HTTP fuzzer for every route of a running tap app (tests/test_fuzz.py, bench/fuzz.py).

    report = await fuzz(url, routes, token="…", seed=7, cases=600)
    report.server_errors        # every 5xx tap answered: must be empty
    report.shape_errors         # a 4xx whose body is not the route's JSON error shape

Routes come from the app's router (`routes_of(app)`), so a route added later is fuzzed too. Each
case is one request built from a valid template for the route (a chat request, a memory, an ingest
event, a JSONL import, a Telegram update, …) and then broken the ways clients and attackers break
them: deeply nested JSON, invalid UTF-8, a `Content-Encoding` the body does not have, wrong types
and `null`s (`importance: null`), empty and huge ids, out-of-range and non-finite timestamps,
truncated and random bytes, garbage query strings and headers, unexpected methods. The same seed
gives the same cases.

Generated requests are sent as real HTTP over loopback with aiohttp; a response counts as tap's own
error when its status is 5xx (the fake upstreams never answer 5xx unless asked).
"""

from __future__ import annotations

import asyncio
import copy
import gzip
import json
import random
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

Json = Any

WEIRD_VALUES: list[Json] = [
    None,
    "",
    " ",
    0,
    -1,
    1,
    2**63,
    -(2**63),
    2**64 + 1,
    10**30,
    1e308,
    -1e308,
    1e-320,
    0.5,
    True,
    False,
    [],
    {},
    [None],
    {"": None},
    "x" * 20_000,
    "\u0000",
    "\ud800",
    "\x1b[31mred",
    "<private>hidden</private>",
    "</private>",
    "sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3bC5dE0fG",
    "💥" * 300,
    "../../etc/passwd",
    "%00",
    "\r\n\r\n",
    "null",
    "default",
    "anonymous",
]
TIMESTAMPS: list[Json] = [1e300, -1e300, 253402300800, -62135596801, 2**63, -1, 0, 1.7e308, 4102444800, "2024-01-01"]
IDS: list[str] = ["", " ", "m_" + "0" * 20, "x" * 5000, "..", "%2F..%2F", "ü", "a/b", "m_missing", "\t"]
SCOPES: list[str] = ["default", "", "a" * 300, "scope with space", "ünï", "../x", "fuzz-a", "fuzz:b/c@d"]
ENCODINGS: list[str] = ["gzip", "deflate", "br", "zstd", "identity", "x-garbage", "gzip, gzip", "compress"]
CONTENT_TYPES: list[str] = [
    "application/json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=xyz",
    "application/json; charset=latin-1",
    "",
]
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")


def chat_text(rng: random.Random) -> str:
    return rng.choice(
        [
            "I live in Porto and my sister is called Ana.",
            "My wifi password for the office is Blue-Falcon-77.",
            "We decided to use Postgres for the backend.",
            "hello",
            "Remember that my PIN is 1234",
        ]
    )


def _messages(rng: random.Random) -> list[Json]:
    return [
        {"role": "user", "content": chat_text(rng)},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": chat_text(rng)},
    ]


def memory_record(rng: random.Random) -> dict[str, Json]:
    now = time.time()
    return {
        "id": f"m_fuzz{rng.randrange(10**12):012d}",
        "scope": rng.choice(["fuzz-a", "fuzz-b"]),
        "content": chat_text(rng),
        "kind": "fact",
        "importance": 3,
        "tags": ["fuzz"],
        "source": "import",
        "created_at": now,
        "updated_at": now,
        "valid_from": now,
    }


def template(method: str, path: str, rng: random.Random) -> Json:
    """A valid request body for a route (None: the route takes no body)."""
    stream = rng.random() < 0.5
    if path == "/v1/messages" or path.startswith("/v1/messages/"):
        return {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": _messages(rng), "stream": stream}
    if path == "/v1/chat/completions":
        return {"model": "gpt-4o", "messages": _messages(rng), "stream": stream}
    if path == "/v1/responses":
        return {"model": "gpt-4.1", "input": chat_text(rng), "stream": stream}
    if path == "/api/chat":
        return {"model": "llama3.2", "messages": _messages(rng), "stream": stream}
    if path == "/api/generate":
        return {"model": "llama3.2", "prompt": chat_text(rng), "stream": stream}
    if path == "/tap/recall":
        return {"text": chat_text(rng), "scope": "fuzz-a", "budget_tokens": 200}
    if path == "/tap/memories" and method == "POST":
        return {"scope": "fuzz-a", "content": chat_text(rng), "kind": "fact", "importance": 3, "tags": ["x"]}
    if path.startswith("/tap/memories/") and method == "PATCH":
        return {"content": chat_text(rng), "importance": 4, "tags": ["y"]}
    if path == "/tap/ingest":
        messages = [{**m, "id": f"t{rng.randrange(10**9)}", "timestamp": time.time()} for m in _messages(rng)]
        return {"scope": "fuzz-a", "conversation": f"c{rng.randrange(100)}", "source": "hook", "messages": messages}
    if path.startswith("/tap/hooks/"):
        return {
            "session_id": f"s{rng.randrange(100)}",
            "transcript_path": "/nonexistent/transcript.jsonl",
            "cwd": "/tmp",
            "hook_event_name": "UserPromptSubmit",
            "prompt": chat_text(rng),
        }
    if "telegram" in path:
        user = {"id": 111, "is_bot": False, "first_name": "Ann"}
        message = {"message_id": rng.randrange(10**6), "date": int(time.time()), "from": user}
        message |= {"chat": {"id": 111, "type": "private"}, "text": chat_text(rng)}
        return {"update_id": rng.randrange(10**9), "message": message}
    if method in ("POST", "PUT", "PATCH"):
        return {"model": "llama3.2", "name": "llama3.2"}
    return None


# -- breaking things ------------------------------------------------------------------------------


def _paths(value: Json, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a JSON value (as key/index paths)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


def _set(value: Json, path: tuple[Any, ...], new: Json) -> Json:
    if not path:
        return new
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return value


def _weird(rng: random.Random, key: Any) -> Json:
    if isinstance(key, str) and key in ("timestamp", "created_at", "updated_at", "valid_from", "last_accessed"):
        return rng.choice(TIMESTAMPS)
    if key == "id":
        return rng.choice(IDS)
    if key == "scope":
        return rng.choice(SCOPES)
    return copy.deepcopy(rng.choice(WEIRD_VALUES))


def deep(depth: int, rng: random.Random) -> str:
    """A deeply nested JSON text (arrays or objects)."""
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def mutate_json(value: Json, rng: random.Random) -> Json:
    """One to three structural changes to a JSON value."""
    value = copy.deepcopy(value)
    for _ in range(rng.randint(1, 3)):
        places = _paths(value)
        path = rng.choice(places)
        roll = rng.random()
        if roll < 0.55:
            value = _set(value, path, _weird(rng, path[-1] if path else None))
        elif roll < 0.7 and path:
            parent = value
            for step in path[:-1]:
                parent = parent[step]
            if isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif isinstance(parent, list) and path[-1] < len(parent):
                parent.pop(path[-1])
        elif roll < 0.8:
            target = value
            for step in path:
                target = target[step]
            if isinstance(target, dict):
                target[rng.choice(["extra", "importance", "stream", "__proto__", "x" * 50])] = _weird(rng, None)
        elif roll < 0.9:
            value = _set(value, path, json.loads(deep(rng.randint(5, 60), rng)))
        else:
            value = [value] if rng.random() < 0.5 else {"wrapped": value}
    return value


def encode(value: Json) -> bytes:
    """JSON bytes; lone surrogates are kept as escapes (what a careless client sends)."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode()


def break_bytes(body: bytes, rng: random.Random) -> bytes:
    """Byte-level damage: invalid UTF-8, truncation, deep nesting, random bytes, odd scalars."""
    roll = rng.random()
    if roll < 0.2 and body:
        at = rng.randrange(len(body))
        return (
            body[:at] + rng.choice([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"]) + body[at:]
        )
    if roll < 0.3 and body:
        return body[: rng.randrange(len(body))]
    if roll < 0.45:
        return deep(rng.choice([100, 1000, 10_000, 100_000, 300_000]), rng).encode()
    if roll < 0.55:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    if roll < 0.65:
        return rng.choice([b"", b"null", b"42", b'"text"', b"[]", b"{}", b"true", b" " * 5000, b"\xef\xbb\xbf{}"])
    if roll < 0.75:
        return body.replace(b"}", b',"a":1,"a":2}', 1)  # duplicate keys
    if roll < 0.85:
        return b"NaN" if rng.random() < 0.5 else body.replace(b"3", b"Infinity", 1)
    return body + b"\n" + body  # two documents


def compress(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(body)
    if encoding == "deflate":
        return zlib.compress(body)
    return body


# -- cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One route of the app: its method and path pattern (`{name}` / `{name:regex}` parameters)."""

    method: str
    pattern: str


@dataclass
class Case:
    """One request to send."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    note: str

    def describe(self) -> str:
        shown = self.body[:120]
        return f"{self.method} {self.path}{'?' + self.query if self.query else ''} [{self.note}] body={shown!r}"


def routes_of(app: web.Application) -> list[Route]:
    """Every (method, path pattern) the app's router serves."""
    out: list[Route] = []
    for route in app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        pattern = info.get("path") or info.get("formatter") or ""
        if pattern and route.method != "HEAD":
            out.append(Route(route.method, pattern))
    return sorted(set(out), key=lambda r: (r.pattern, r.method))


PASSTHROUGH_TAILS = {
    "/v1/": ["models", "messages/count_tokens", "embeddings", "files", "nope", "models/x%00y"],
    "/api/": ["tags", "show", "embed", "ps", "version", "pull", "nope"],
}


def fill(pattern: str, rng: random.Random, known_ids: Sequence[str]) -> str:
    """A concrete path for a pattern: ids of memories that exist or broken ones, API tails, events."""
    path = pattern
    while "{" in path:
        start, end = path.index("{"), path.index("}")
        name = path[start + 1 : end].split(":", 1)[0]
        if name == "tail":
            prefix = path[:start]
            value = rng.choice(PASSTHROUGH_TAILS.get(prefix, ["x"]))
        elif name == "event":
            value = rng.choice(["user-prompt-submit", "SessionStart", "stop", "nope", "", "x" * 300])
        elif known_ids and rng.random() < 0.5:
            value = rng.choice(list(known_ids))
        else:
            value = quote(rng.choice(IDS), safe="") or "%20"
        path = path[:start] + value + path[end + 1 :]
    return path


def query_for(path: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return ""
    params = {
        "scope": rng.choice(SCOPES),
        "limit": rng.choice(["10", "-1", "abc", "1e99", "99999999999999999999", "", "0"]),
        "offset": rng.choice(["0", "-5", "x", "10000000000000000000000"]),
        "all": rng.choice(["1", "0", "yes"]),
        "layer": rng.choice(["all", "memories", "excerpts", "bogus", ""]),
        "q": rng.choice(["porto", "", "💥" * 100, "\x00", "a" * 5000, "NEAR(x y)", '"unbalanced', "*"]),
        "agent": rng.choice(["claude", "codex", "nope"]),
    }
    chosen = rng.sample(sorted(params), rng.randint(1, 4))
    return "&".join(f"{k}={quote(params[k], safe='')}" for k in chosen)


@dataclass
class Generator:
    """Seeded cases for a set of routes."""

    routes: Sequence[Route]
    token: str
    seed: int = 0
    extra_headers: dict[str, dict[str, str]] = field(default_factory=dict)
    known_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def case(self) -> Case:
        rng = self.rng
        route = rng.choice(self.routes)
        method = route.method if route.method != "*" else rng.choice(("GET", "POST"))
        note = []
        if rng.random() < 0.05:
            method = rng.choice(METHODS)
            note.append("method")
        path = fill(route.pattern, rng, self.known_ids)
        headers: dict[str, str] = {"Authorization": f"Bearer {self.token}"}
        for prefix, extra in self.extra_headers.items():
            if path.startswith(prefix):
                headers |= extra
        body_value = template(method, path, rng)
        if path.startswith("/tap/import") and method == "POST":
            records = [memory_record(rng) for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.8:
                records = [mutate_json(r, rng) if rng.random() < 0.6 else r for r in records]
                note.append("records")
            body = b"\n".join(encode(r) for r in records)
        elif body_value is None:
            body = b"" if rng.random() < 0.8 else encode(mutate_json({"x": 1}, rng))
        else:
            roll = rng.random()
            if roll < 0.12:
                body = encode(body_value)
                note.append("valid")
            else:
                body = encode(mutate_json(body_value, rng))
                note.append("fields")
            if rng.random() < 0.35:
                body = break_bytes(body, rng)
                note.append("bytes")
        roll = rng.random()
        if roll < 0.1:
            encoding = rng.choice(ENCODINGS)
            headers["Content-Encoding"] = encoding
            if rng.random() < 0.4:
                body = compress(body, encoding)
            note.append(f"encoding={encoding}")
        if rng.random() < 0.3:
            headers["Content-Type"] = rng.choice(CONTENT_TYPES)
        if rng.random() < 0.1:
            headers["x-tap-scope"] = rng.choice(SCOPES)
        if rng.random() < 0.05:
            headers["x-tap-conversation"] = rng.choice(IDS)
        if rng.random() < 0.05:
            headers["Authorization"] = rng.choice(
                [
                    f"bearer {self.token}",
                    f"BEARER {self.token}",
                    "Basic Zm9vOmJhcg==",
                    "Bearer",
                    "",
                    f"Bearer  {self.token} ",
                ]
            )
            note.append("auth")
        if rng.random() < 0.03:
            headers["x-tap-no-memory"] = "1"
        return Case(method, path, query_for(path, rng), headers, body, ",".join(note))


# -- running --------------------------------------------------------------------------------------


@dataclass
class Finding:
    """One response that broke a rule."""

    case: str
    status: int
    body: str


@dataclass
class FuzzReport:
    """What a fuzz run did and found."""

    seed: int
    cases: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[Finding] = field(default_factory=list)
    shape_errors: list[Finding] = field(default_factory=list)
    parser_rejects: list[Finding] = field(default_factory=list)
    transport_errors: list[Finding] = field(default_factory=list)
    elapsed_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "cases": self.cases,
            "server_errors_5xx": len(self.server_errors),
            "shape_errors": len(self.shape_errors),
            "http_parser_rejects": len(self.parser_rejects),
            "transport_errors": len(self.transport_errors),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "elapsed_s": round(self.elapsed_s, 1),
        }


# What aiohttp's HTTP parser answers (text/plain) for a request it rejects before any route runs
# (a request line over 8190 bytes, …): tap's routes never see these, so they have no route shape.
PARSER_MESSAGES = ("Got more than", "Bad status line", "Invalid method", "Can not decode content-encoding")


def has_error_shape(body: bytes) -> bool:
    """A JSON object with an `error` member (tap's, Anthropic's, OpenAI's and Ollama's shapes)."""
    try:
        doc = json.loads(body)
    except ValueError:
        return False
    return isinstance(doc, dict) and "error" in doc


async def send(
    session: aiohttp.ClientSession, base: str, case: Case, report: FuzzReport, shape_check: Callable[[str], bool]
) -> None:
    url = base + case.path + ("?" + case.query if case.query else "")
    try:
        async with session.request(
            case.method,
            aiohttp.client.URL(url, encoded=True),
            data=case.body if case.method not in ("GET", "HEAD") or case.body else None,
            headers=case.headers,
            skip_auto_headers=("Content-Type",),
        ) as response:
            body = await response.read()
    except (aiohttp.ClientError, TimeoutError) as exc:
        report.transport_errors.append(Finding(case.describe(), 0, f"{type(exc).__name__}: {exc}"))
        return
    report.statuses[response.status] += 1
    text = body[:500].decode("utf-8", "replace")
    if response.status >= 500:
        report.server_errors.append(Finding(case.describe(), response.status, text))
    elif response.status >= 400 and case.method != "HEAD" and shape_check(case.path) and not has_error_shape(body):
        parser = response.content_type == "text/plain" and text.startswith(PARSER_MESSAGES)
        (report.parser_rejects if parser else report.shape_errors).append(
            Finding(case.describe(), response.status, text)
        )


async def fuzz(
    base_url: str,
    routes: Sequence[Route],
    *,
    token: str,
    seed: int = 0,
    cases: int = 500,
    concurrency: int = 4,
    extra_headers: dict[str, dict[str, str]] | None = None,
    known_ids: Sequence[str] = (),
    shape_check: Callable[[str], bool] = lambda path: True,
    on_progress: Callable[[int], None] | None = None,
) -> FuzzReport:
    """Send `cases` generated requests (at most `concurrency` at once); see the module docstring."""
    generator = Generator(routes, token, seed, extra_headers or {}, list(known_ids))
    report = FuzzReport(seed=seed)
    started = time.perf_counter()
    timeout = aiohttp.ClientTimeout(total=60)
    queue: asyncio.Queue[Case | None] = asyncio.Queue()
    for _ in range(cases):
        queue.put_nowait(generator.case())
    for _ in range(concurrency):
        queue.put_nowait(None)

    async def worker(session: aiohttp.ClientSession) -> None:
        while (case := await queue.get()) is not None:
            await send(session, base_url, case, report, shape_check)
            report.cases += 1
            if on_progress is not None and report.cases % 500 == 0:
                on_progress(report.cases)

    async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    report.elapsed_s = time.perf_counter() - started
    return report
