"""Record what the real Claude Code and Codex send: `python -m testkit.clients.record [--out DIR]`.

Installs the CLIs (testkit/clients/npm.py: the pinned versions, or the ones the environment names),
runs each against a fake model API on loopback that answers with text (testkit/clients/models.py),
and writes, per client and version, into `testkit/data/clients/<client>-<version>/`:
- Claude Code: `first-prompt.json` (the body of the first request of a `claude -p` session),
  `second-prompt.json` (the body after `claude -p --continue`), `session.jsonl` (the session
  transcript Claude Code wrote to `~/.claude/projects/…`);
- Codex: `exec.json` (the body of `codex exec`);
- `meta.json`: the client, its version, the date, the commands and the prompts.
Bodies are the bytes the CLI sent, unchanged. The replay tests (tests/clients/test_recorded_bodies.py,
tests/bridges/test_logtail_claude_code.py) read them; re-run this when a new version changes them.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import shutil
import tempfile
from pathlib import Path

from testkit.clients import agents
from testkit.clients.models import AgentAnthropic, AgentOpenAI
from testkit.clients.npm import CLAUDE_CODE, CODEX, install, installed_version

DATA = Path(__file__).resolve().parent.parent / "data" / "clients"
FIRST_PROMPT = "Which colour should I paint the study?"
SECOND_PROMPT = "And the hallway, same colour?"
CODEX_PROMPT = "Which colour should I paint the study?"


def folder_for(client: str, version: str, out: Path) -> Path:
    """Where one client version's recordings go."""
    target = out / f"{client}-{version}"
    target.mkdir(parents=True, exist_ok=True)
    return target


def write_meta(target: Path, **fields: object) -> None:
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    (target / "meta.json").write_text(json.dumps({**fields, "recorded": today}, indent=2) + "\n")


def prepared(package: str, scratch: Path, name: str) -> tuple[Path, str, Path, Path]:
    """The CLI's install folder and version, and a fresh HOME and project folder for its run."""
    folder = install(package)
    home, project = scratch / f"{name}-home", scratch / f"{name}-project"
    project.mkdir(parents=True)
    return folder, installed_version(folder, package), home, project


async def record_claude_code(out: Path, scratch: Path) -> Path:
    """Two headless turns of one Claude Code session; its bodies and its transcript."""
    folder, version, home, project = prepared(CLAUDE_CODE, scratch, "claude")
    async with AgentAnthropic(chunk_sizes=(4096,)) as up:
        env = agents.claude_environment(home, up.url)
        (await agents.claude(folder, FIRST_PROMPT, env, project)).check()
        (await agents.claude(folder, SECOND_PROMPT, env, project, "--continue")).check()
        bodies = [r.body for r in up.requests if r.path == "/v1/messages"]
    assert len(bodies) == 2, f"expected 2 model requests, got {len(bodies)}"
    target = folder_for("claude-code", version, out)
    (target / "first-prompt.json").write_bytes(bodies[0])
    (target / "second-prompt.json").write_bytes(bodies[1])
    sessions = list((home / ".claude" / "projects").glob("*/*.jsonl"))
    assert len(sessions) == 1, f"expected one session transcript, found {sessions}"
    shutil.copyfile(sessions[0], target / "session.jsonl")
    write_meta(
        target,
        client="Claude Code",
        package=CLAUDE_CODE,
        version=version,
        commands=[f"claude -p {FIRST_PROMPT!r}", f"claude -p --continue {SECOND_PROMPT!r}"],
        cwd=str(project),
    )
    return target


async def record_codex(out: Path, scratch: Path) -> Path:
    """One `codex exec` turn; its body."""
    folder, version, home, project = prepared(CODEX, scratch, "codex")
    async with AgentOpenAI(chunk_sizes=(4096,)) as up:
        agents.write_codex_config(home, up.url + "/v1")
        (await agents.codex_exec(folder, CODEX_PROMPT, agents.codex_environment(home), project)).check()
        bodies = [r.body for r in up.requests if r.path == "/v1/responses"]
    assert len(bodies) == 1, f"expected 1 model request, got {len(bodies)}"
    target = folder_for("codex", version, out)
    (target / "exec.json").write_bytes(bodies[0])
    write_meta(
        target,
        client="Codex CLI",
        package=CODEX,
        version=version,
        commands=[f"codex exec --skip-git-repo-check {CODEX_PROMPT!r}"],
        cwd=str(project),
    )
    return target


async def main(out: Path) -> None:
    scratch = Path(tempfile.gettempdir()) / "tap-client-recording"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    for recorded in (await record_claude_code(out, scratch), await record_codex(out, scratch)):
        print(f"recorded {recorded}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA)
    asyncio.run(main(parser.parse_args().out))
