"""Soak: a real `tap serve` under mixed traffic for a long while, with big bodies, clients that give
up and a store outage (the data dir's disk full for a while), then: is tap still answering, is its
memory back near where it started, was any acknowledged turn lost?

    ./dev bench soak                 # the run for the record: 60 minutes
    ./dev bench soak --minutes 5     # any length
    ./dev bench soak --quick         # 45 s: the smoke test's run

Traffic, all at once for the whole run (each loop paced, bounded in count and time):
- chats: Anthropic requests (streamed and not), each with a marker word; a 200 with the whole reply
  is an *acknowledged turn*;
- big bodies: a request of `--big-mb` MB (a long pasted context) every `--big-every-s` seconds;
- aborts: clients asking a silent upstream (the Ollama route) and leaving after 0.5 s; the upstream
  counts the requests tap cancelled;
- the outage: from 40 % of the run, the data dir's file system (a tmpfs of its own: testkit.small_disk)
  is filled for a tenth of the run (at most 3 minutes), then freed;
- health and RSS sampled every 5 s.

At the end (traffic stopped, captures retried): every acknowledged turn's marker must be in the
turn log (read from the server's own view of its data dir), tap must answer, and its RSS (main
process) is compared with the RSS after the warm-up. Written to bench/results/soak.json (or --out).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp  # noqa: E402
from benchutil import ROOT, machine, note, rss_mb, summary_ms, write_result

from testkit.serve_process import ServeProcess, admin  # noqa: E402
from testkit.small_disk import fill, small_disk_prefix  # noqa: E402

H = {"x-api-key": "sk-soak", "anthropic-version": "2023-06-01"}
DISK_MB = 400


class Silent:
    """An upstream that reads each request and never answers; counts the connections tap closed."""

    def __init__(self) -> None:
        self.received = 0
        self.cancelled = 0
        self.url = ""

    async def start(self) -> asyncio.Server:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        return server

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.received += 1
            while await reader.read(65536):
                pass
            self.cancelled += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


class Soak:
    """One run: the server, the loops, the counters."""

    def __init__(self, args: argparse.Namespace, home: Path, anthropic: str, silent: Silent) -> None:
        self.args = args
        self.duration: float = float(args.minutes) * 60
        self.silent = silent
        prefix = small_disk_prefix(DISK_MB)
        self.outage_possible = prefix is not None
        config = home.parent / "soak.toml"
        config.write_text(
            f'[upstream]\nanthropic = "{anthropic}"\nollama = "{silent.url}"\n[extract]\nflush_after_s = 5.0\n'
        )
        self.server = ServeProcess(home, config=config, prefix=prefix)
        self.markers: list[str] = []
        self.counts: dict[str, int] = {}
        self.chat_ms: list[float] = []
        self.health: list[dict[str, Any]] = []
        self.rss: list[tuple[float, float]] = []
        self.outage: dict[str, float] = {}
        self.started = 0.0
        self._ids = itertools.count(1)

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def left(self) -> float:
        return self.duration - (time.monotonic() - self.started)

    async def chat(self, session: aiohttp.ClientSession, worker: int) -> None:
        while self.left() > 0:
            n = next(self._ids)
            marker = f"soakmark{n}x"
            stream = n % 2 == 0
            text = f"Note {n}: my colleague {marker} prefers tea in the afternoon and we meet on Fridays."
            payload = {
                "model": "m",
                "max_tokens": 64,
                "stream": stream,
                "messages": [{"role": "user", "content": text}],
            }
            headers = {**H, "x-tap-conversation": f"soak-{worker}-{n // 5}"}
            began = time.perf_counter()
            try:
                async with session.post(self.server.url + "/v1/messages", json=payload, headers=headers) as response:
                    body = await response.read()
                    if response.status == 200 and (b"message_stop" in body or not stream):
                        self.markers.append(marker)
                        self.chat_ms.append((time.perf_counter() - began) * 1000)
                        self.count("chats_acknowledged")
                        if "capture-failed" in response.headers.get("x-tap-degraded", ""):
                            self.count("chats_flagged_capture_failed")
                    else:
                        self.count(f"chats_status_{response.status}")
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.count(f"chats_error_{type(exc).__name__}")
            await asyncio.sleep(self.args.chat_pause_s)

    async def big(self, session: aiohttp.ClientSession) -> None:
        body = ("Here is the whole log of the build, read it and tell me what failed. " * (self.args.big_mb * 15_000))[
            : self.args.big_mb * 1024 * 1024
        ]
        while self.left() > self.args.big_every_s / 2:
            await asyncio.sleep(self.args.big_every_s)
            payload = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": body}]}
            try:
                async with session.post(self.server.url + "/v1/messages", json=payload, headers=H) as response:
                    await response.read()
                    self.count(f"big_status_{response.status}")
            except (aiohttp.ClientError, TimeoutError) as exc:
                self.count(f"big_error_{type(exc).__name__}")

    async def abort(self) -> None:
        payload = {"model": "m", "messages": [{"role": "user", "content": "are you there?"}]}
        while self.left() > 0:
            timeout = aiohttp.ClientTimeout(total=0.5)
            try:
                async with aiohttp.ClientSession(timeout=timeout) as session:
                    await session.post(self.server.url + "/api/chat", json=payload)
            except TimeoutError:
                self.count("aborts")
            except aiohttp.ClientError as exc:
                self.count(f"abort_error_{type(exc).__name__}")
            await asyncio.sleep(self.args.abort_pause_s)

    async def watch(self, session: aiohttp.ClientSession) -> None:
        assert self.server.proc is not None
        while self.left() > 0:
            began = time.perf_counter()
            try:
                async with session.get(self.server.url + "/tap/health") as response:
                    doc = await response.json()
                    status = doc.get("status", "?")
            except (aiohttp.ClientError, TimeoutError) as exc:
                status = f"no answer: {type(exc).__name__}"
            at = time.monotonic() - self.started
            self.health.append(
                {"at_s": round(at, 1), "status": status, "ms": round((time.perf_counter() - began) * 1000, 1)}
            )
            self.rss.append((at, rss_mb(self.server.proc.pid)))
            await asyncio.sleep(5)

    async def disk_outage(self) -> None:
        if not self.outage_possible:
            return
        await asyncio.sleep(0.4 * self.duration)
        length = min(0.1 * self.duration, 180.0)
        filler = await asyncio.to_thread(fill, self.server)
        self.outage["from_s"] = round(time.monotonic() - self.started, 1)
        await asyncio.sleep(length)
        await asyncio.to_thread(filler.unlink)
        self.outage["to_s"] = round(time.monotonic() - self.started, 1)

    def lost_turns(self) -> list[str]:
        """Acknowledged markers the turn log does not hold (read through the server's view)."""
        # a copy: SQLite resolves the /proc/PID/root link to a path outside the server's mounts
        copy = Path(tempfile.mkdtemp(prefix="tap-soak-log-"))
        for suffix in ("", "-wal"):
            source = self.server.state / f"turnlog.db{suffix}"
            if source.exists():
                shutil.copyfile(source, copy / f"turnlog.db{suffix}")
        db = sqlite3.connect(copy / "turnlog.db", timeout=30)
        try:
            logged = " ".join(row[0].decode("utf-8", "replace") for row in db.execute("SELECT record FROM exchanges"))
        finally:
            db.close()
            shutil.rmtree(copy, ignore_errors=True)
        return [marker for marker in self.markers if f" {marker} " not in logged]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="tap-soak-"))
    home = work / "home"
    home.mkdir()
    port_file = work / "upstream.port"
    upstream = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, str(ROOT / "bench" / "fake_upstream.py"), str(port_file), "--events", "12", "--gap-ms", "5"],
    )
    silent = Silent()
    silent_server = await silent.start()
    soak: Soak | None = None
    try:
        await asyncio.to_thread(_wait_for, port_file)
        soak = Soak(args, home, f"http://127.0.0.1:{port_file.read_text()}", silent)
        await asyncio.to_thread(soak.server.start, 180)
        assert soak.server.proc is not None
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            soak.started = time.monotonic()
            soak.duration = args.warm_up_s
            await asyncio.gather(*(soak.chat(session, w) for w in range(2)))  # warm-up: caches, the recall process
            start_rss = rss_mb(soak.server.proc.pid)
            soak.markers.clear()
            soak.counts.clear()
            soak.chat_ms.clear()
            soak.started, soak.duration = time.monotonic(), args.minutes * 60
            note(f"soak: {args.minutes:g} min of traffic (start RSS {start_rss:.0f} MB)")
            await asyncio.gather(
                *(soak.chat(session, w) for w in range(args.chatters)),
                soak.big(session),
                soak.abort(),
                soak.watch(session),
                soak.disk_outage(),
            )
            settle_until = time.monotonic() + 180
            while time.monotonic() < settle_until:  # captures that waited out the outage are written
                captured = admin(soak.server, "GET", "/tap/status")["capture"]
                if captured["waiting"] == 0:
                    break
                await asyncio.sleep(2)
            await asyncio.sleep(args.quiet_s)
            async with session.get(soak.server.url + "/tap/health") as response:
                final_health = (await response.json())["status"]
            end_rss = rss_mb(soak.server.proc.pid)
            status = admin(soak.server, "GET", "/tap/status")
            lost = await asyncio.to_thread(soak.lost_turns)
    finally:
        if soak is not None:
            await asyncio.to_thread(soak.server.stop)
        silent_server.close()
        upstream.kill()
        shutil.rmtree(work, ignore_errors=True)
    outage_health = [
        h["status"] for h in soak.health if soak.outage and soak.outage["from_s"] <= h["at_s"] <= soak.outage["to_s"]
    ]
    ratio = end_rss / start_rss
    return {
        "benchmark": "soak",
        "machine": machine(),
        "minutes": args.minutes,
        "traffic": dict(sorted(soak.counts.items())),
        "chat_ms": summary_ms(soak.chat_ms) if soak.chat_ms else {},
        "acknowledged_turns": len(soak.markers),
        "acknowledged_turns_lost": len(lost),
        "lost_examples": lost[:10],
        "aborts_sent": soak.counts.get("aborts", 0),
        "upstream_requests_cancelled": silent.cancelled,
        "upstream_requests_seen": silent.received,
        "big_body_mb": args.big_mb,
        "outage": soak.outage or "not run (no mount namespace here)",
        "health_during_outage": {s: outage_health.count(s) for s in sorted(set(outage_health))},
        "health_unanswered": sum(1 for h in soak.health if h["status"].startswith("no answer")),
        "health_ms": summary_ms([h["ms"] for h in soak.health]) if soak.health else {},
        "capture": status["capture"],
        "connections": status.get("connections", {}),
        "recall_process": status.get("recall_process", {}),
        "rss_mb": {
            "start": round(start_rss, 1),
            "peak": round(max(r for _, r in soak.rss), 1) if soak.rss else None,
            "end": round(end_rss, 1),
            "end_over_start": round(ratio, 2),
            "samples": [[round(at), round(r)] for at, r in soak.rss[:: max(1, len(soak.rss) // 60)]],
        },
        "final_health": final_health,
        "verdict": {
            "answering": final_health in ("ok", "degraded"),
            "rss_within_1_5x": ratio <= 1.5,
            "no_acknowledged_turn_lost": not lost,
        },
    }


def _wait_for(port_file: Path) -> None:
    """Until the fake upstream wrote its port."""
    deadline = time.monotonic() + 60
    while not (port_file.exists() and port_file.read_text()):
        if time.monotonic() > deadline:
            raise RuntimeError("the fake upstream did not start")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--quick", action="store_true", help="a 45-second run (the smoke test's)")
    parser.add_argument("--chatters", type=int, default=3)
    parser.add_argument("--chat-pause-s", type=float, default=1.0)
    parser.add_argument("--abort-pause-s", type=float, default=2.0)
    parser.add_argument("--big-mb", type=int, default=20)
    parser.add_argument("--big-every-s", type=float, default=30.0)
    parser.add_argument("--quiet-s", type=float, default=60.0, help="quiet time before the end RSS")
    parser.add_argument("--warm-up-s", type=float, default=20.0, help="traffic before the start RSS")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.minutes, args.big_mb, args.big_every_s, args.quiet_s, args.warm_up_s = 0.75, 5, 10.0, 10.0, 10.0
    result = asyncio.run(run(args))
    path = write_result("soak", result, args.out)
    verdict = result["verdict"]
    print(json.dumps({k: result[k] for k in ("acknowledged_turns", "acknowledged_turns_lost", "rss_mb", "verdict")}))
    print(f"written to {path}")
    if not all(verdict.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
