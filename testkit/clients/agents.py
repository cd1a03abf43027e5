"""Running the real Claude Code and Codex CLIs against loopback servers, isolated from the machine.

Each run gets its own HOME (so `~/.claude`, `~/.claude.json` and `~/.codex` are the test's), a
dummy API key, the base URL of a loopback server (tap, or a fake model API), and no proxy
variables from the machine; Claude Code is told to send nothing but model requests. The CLIs run
as subprocesses with a timeout; `Run` keeps their exit code and output for the assertion messages.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from testkit.clients.npm import CLAUDE_CODE, CODEX, binary

RUN_TIMEOUT_S = 120.0
_DROPPED = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy", "NO_PROXY")
_DROPPED_PREFIXES = ("ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "TAP_")


@dataclass(frozen=True)
class Run:
    """One finished CLI run."""

    code: int
    stdout: str
    stderr: str

    def check(self) -> Run:
        """The run, when it exited 0 (else AssertionError with its output)."""
        assert self.code == 0, f"exit {self.code}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        return self


def base_environment(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The machine's environment without proxies and API settings, with HOME = `home`."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED and not k.startswith(_DROPPED_PREFIXES)}
    env["HOME"] = str(home)
    return {**env, **(extra or {})}


def claude_environment(home: Path, base_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Claude Code talking to `base_url` with a dummy key, no telemetry, no update checks."""
    return base_environment(
        home,
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            **(extra or {}),
        },
    )


def write_codex_config(home: Path, base_url: str, extra_toml: str = "") -> Path:
    """`~/.codex/config.toml` naming a Responses provider at `base_url` (e.g. tap's `/v1`)."""
    folder = home / ".codex"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.toml"
    config.write_text(
        'model_provider = "tap"\n'
        'model = "gpt-5.5"\n'
        "[model_providers.tap]\n"
        'name = "tap"\n'
        f'base_url = "{base_url}"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n' + extra_toml
    )
    return config


def codex_environment(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Codex with its home in `home/.codex` and a dummy key."""
    return base_environment(
        home, {"CODEX_HOME": str(home / ".codex"), "OPENAI_API_KEY": "sk-test-key", **(extra or {})}
    )


async def run(args: list[str], env: dict[str, str], cwd: Path, limit_s: float = RUN_TIMEOUT_S) -> Run:
    """Run a CLI to its end (killed past `limit_s` seconds), stdin closed."""
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), limit_s)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        return Run(-9, out.decode(errors="replace"), err.decode(errors="replace") + f"\n(killed after {limit_s} s)")
    return Run(proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))


async def claude(folder: Path, prompt: str, env: dict[str, str], cwd: Path, *options: str) -> Run:
    """`claude -p PROMPT [options]` (one headless turn)."""
    return await run([str(binary(folder, CLAUDE_CODE)), "-p", prompt, *options], env, cwd)


async def codex_exec(folder: Path, prompt: str, env: dict[str, str], cwd: Path, *options: str) -> Run:
    """`codex exec --skip-git-repo-check [options] PROMPT` (one headless turn)."""
    args = [str(binary(folder, CODEX)), "exec", "--skip-git-repo-check", *options, prompt]
    return await run(args, env, cwd)
