"""Agent hooks against a real `tap serve`: command hooks (`tap hook` processes) and http hooks.

A scripted Claude Code session: SessionStart → prompt → the transcript grows → Stop → extraction
→ the next prompt's additionalContext holds the memory; not again in the same session; again after
a compaction. Then the http endpoint, the hook process's imports, Codex, and one ingestion per turn
when the log-tail reads the same transcript.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bridges.hooks.hooklog import log_path
from tap.cli.main import main
from testkit.agent_hooks import Transcript, payload, run_hook
from testkit.serve_process import ServeProcess
from testkit.waits import wait_until

pytestmark = pytest.mark.slow
HEAVY = ("chromadb", "onnxruntime", "anthropic", "aiohttp", "numpy", "msgspec", "click", "telegram")


class Served:
    """The running server, its data dir and config, and a git project for the sessions."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.home.mkdir()
        self.config = root / "tap.toml"
        # generous: the machine runs other tests too (prompt recalls keep to the proxy's deadline)
        self.config.write_text("[hooks]\ntimeout_s = 2.0\n[recall]\ndeadline_ms = 1500\n")
        self.project = root / "billing"
        (self.project / ".git").mkdir(parents=True)
        self.projects = root / "claude" / "projects"
        self.server = ServeProcess(self.home, config=self.config).start()
        self.cli_env = {"TAP_HOME": str(self.home), "HOME": str(self.home)}  # no real settings file is read

    def hook(self, event: str, body: bytes, **options: Any) -> Any:
        return run_hook(event, body, home=self.home, config=self.config, **options)

    def transcript(self, session: str) -> Transcript:
        return Transcript(self.projects / "-billing" / f"{session}.jsonl", session, self.project)

    def call(self, method: str, path: str, body: bytes | None = None, *, token: bool = True) -> tuple[int, bytes]:
        req = urllib.request.Request(self.server.url + path, data=body, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {self.server.token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def memories(self) -> list[str]:
        query = urllib.parse.urlencode({"scope": str(self.project), "limit": 500})
        status, body = self.call("GET", f"/tap/memories?{query}")
        assert status == 200
        return [m["content"] for m in json.loads(body)["memories"]]

    def fired(self, event: str, agent: str = "claude") -> tuple[int, str]:
        """How many times the server handled the hook event, and how the last one went (hooks.db;
        a Stop is recorded once its background capture is done, `tap hooks status` shows it)."""
        with sqlite3.connect(self.home / "hooks.db") as db:
            row = db.execute(
                "SELECT count, outcome FROM fired WHERE agent = ? AND event = ?", (agent, event)
            ).fetchone()
        return (int(row[0]), str(row[1])) if row else (0, "")

    def problems(self) -> list[str]:
        """The lines in tap.log: one per hook that failed open (gave up waiting, could not reach tap)."""
        path = log_path(self.home)
        return path.read_text().splitlines() if path.exists() else []

    def seen(self, conversation: str) -> list[tuple[str, str]]:
        with sqlite3.connect(self.home / "queue.db") as db:
            rows = db.execute("SELECT scope, turn_id FROM seen WHERE conversation = ?", (conversation,)).fetchall()
        return sorted(rows)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    made = Served(tmp_path_factory.mktemp("hooks-serve"))
    yield made
    made.server.stop()


def test_scripted_session_end_to_end(served: Served) -> None:
    session = "7c1e5a52-e2e"
    transcript = served.transcript(session)
    start = served.hook(
        "session-start", payload("SessionStart", session, served.project, transcript.path, source="startup")
    )
    assert start.returncode == 0 and start.stdout == b""  # nothing known about this project yet
    problems = served.problems()
    said = "I'm Ana, I lead the payments team. We deploy the billing service on Fly.io."
    first = served.hook(
        "user-prompt-submit", payload("UserPromptSubmit", session, served.project, transcript.path, prompt=said)
    )
    assert first.returncode == 0 and first.stdout == b""
    transcript.user(said)
    transcript.assistant("Fly.io noted; I'll keep the deploy config there.", tool=True)
    stop = served.hook("stop", payload("Stop", session, served.project, transcript.path, stop_hook_active=False))
    assert stop.returncode == 0 and stop.stdout == b"" and served.problems() == problems  # answered, not given up
    wait_until(lambda: any("Fly.io" in m for m in served.memories()), what="the memory (Stop closed the chunk)")

    question = payload(
        "UserPromptSubmit", session, served.project, transcript.path, prompt="where do we deploy billing?"
    )
    second = served.hook("user-prompt-submit", question)
    output = json.loads(second.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "Fly.io" in second.context() and second.context().startswith("<recalled-memories>")
    why = CliRunner().invoke(main, ["--config", str(served.config), "why", "--last", "--json"], env=served.cli_env)
    record = json.loads(why.output)  # the hook's recall went through the interception core: it has a record
    assert (record["path"], record["conversation"], record["scope"]) == (
        "/tap/hooks/user-prompt-submit",
        session,
        str(served.project),
    )
    assert record["query"] == "where do we deploy billing?" and record["injected"] >= 1
    assert any(c["outcome"] == "injected" and "Fly.io" in c["content"] for c in record["candidates"])
    assert served.hook("user-prompt-submit", question).stdout == b""  # already in this session's context

    compacted = payload("SessionStart", session, served.project, transcript.path, source="compact")
    assert (
        served.hook(
            "pre-compact", payload("PreCompact", session, served.project, transcript.path, trigger="auto")
        ).stdout
        == b""
    )
    assert "Fly.io" in served.hook("session-start", compacted).context()  # given again after compaction
    end = served.hook("session-end", payload("SessionEnd", session, served.project, transcript.path, reason="exit"))
    assert end.returncode == 0 and end.stdout == b"" and served.problems() == problems

    status = CliRunner().invoke(
        main,
        ["--config", str(served.config), "hooks", "status", "--json"],
        env=served.cli_env,
    )
    fired = {f["event"]: f for f in json.loads(status.output)["last_fired"]}
    assert fired["user-prompt-submit"]["count"] == 3 and fired["stop"]["outcome"] == "queued 2 turns, 1 chunk"


def test_http_hooks_answer_in_the_same_shape(served: Served) -> None:
    session = "http-session"
    transcript = served.transcript(session)
    transcript.user("Our staging cluster is called billing-stage-eu.")
    transcript.assistant("billing-stage-eu, noted.")
    stop = payload("Stop", session, served.project, transcript.path, stop_hook_active=False)
    assert served.call("POST", "/tap/hooks/stop", stop, token=False)[0] == 401
    assert served.call("POST", "/tap/hooks/Stop", stop) == (200, b"")
    wait_until(lambda: any("billing-stage-eu" in m for m in served.memories()), what="the staging memory")
    ask = payload(
        "UserPromptSubmit", session + "-2", served.project, None, prompt="what is our staging cluster called?"
    )
    status, body = served.call("POST", "/tap/hooks/UserPromptSubmit", ask)
    assert status == 200 and "billing-stage-eu" in json.loads(body)["hookSpecificOutput"]["additionalContext"]
    assert served.call("POST", "/tap/hooks/PostToolUse", ask)[0] == 400
    assert served.call("POST", "/tap/hooks/stop?agent=cursor", ask)[0] == 400
    assert served.call("POST", "/tap/hooks/stop", b"[1, 2]")[0] == 400


def test_hook_process_imports_nothing_heavy_when_a_server_runs(served: Served) -> None:
    body = payload("UserPromptSubmit", "imports", served.project, None, prompt="anything about deploys?")
    code = (
        "import sys; from tap.cli.launch import main; "
        "sys.argv = ['tap', '--config', sys.argv[1], 'hook', 'user-prompt-submit']; main()"
    )
    env = {"TAP_HOME": str(served.home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, str(served.config)],
        input=body,
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.decode().splitlines() if "|" in line}
    assert "bridges" in imported and not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_codex_session_through_the_server(served: Served) -> None:
    session = "019a7d-codex"
    common = {"model": "gpt-5.1-codex", "turn_id": "t-41"}
    said = "Our CI runs on Buildkite with eight agents."
    ask = payload("UserPromptSubmit", session, served.project, None, prompt=said, **common)
    assert served.hook("user-prompt-submit", ask, agent="codex").returncode == 0
    reply = "Buildkite with eight agents, understood."
    stop = payload(
        "Stop", session, served.project, None, stop_hook_active=False, last_assistant_message=reply, **common
    )
    assert served.hook("stop", stop, agent="codex").stdout == b""
    wait_until(lambda: any("Buildkite" in m for m in served.memories()), what="the CI memory")
    assert served.seen(session) == [(str(served.project), "t-41:assistant"), (str(served.project), "t-41:user")]
    later = payload(
        "UserPromptSubmit",
        session,
        served.project,
        None,
        prompt="which CI do we use?",
        model="gpt-5.1-codex",
        turn_id="t-42",
    )
    assert "Buildkite" in served.hook("user-prompt-submit", later, agent="codex").context()


def test_hooks_and_the_log_tail_store_each_turn_once(served: Served) -> None:
    session = "5f0c2b1e-once"
    transcript = served.transcript(session)
    ids = [
        transcript.user("Invoices are archived to S3 after 90 days."),
        transcript.assistant("Archive after 90 days."),
    ]
    served.hook("stop", payload("Stop", session, served.project, transcript.path))
    wait_until(lambda: len(served.seen(session)) == 2, what="the two turns queued")

    def ingest() -> dict[str, Any]:
        result = CliRunner().invoke(
            main,
            ["--config", str(served.config), "ingest", str(served.projects), "--json"],
            env={"TAP_HOME": str(served.home)},
        )
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    assert ingest()["turns"] == 0  # the log-tail (through the server) finds both turns already queued
    ids += [transcript.user("The archive bucket is invoices-archive-eu."), transcript.assistant("Bucket noted.")]
    assert ingest()["turns"] == 2  # the log-tail first this time ...
    stops, _ = served.fired("stop")
    served.hook("stop", payload("Stop", session, served.project, transcript.path))
    wait_until(lambda: served.fired("stop")[0] == stops + 1, what="the server to have read the transcript for Stop")
    assert not served.fired("stop")[1].startswith("failed"), served.fired("stop")
    assert served.seen(session) == sorted((str(served.project), i) for i in ids)  # ... each uuid once
