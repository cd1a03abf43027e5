"""Run mitmproxy with the tap addon: on the current event loop (`tap mitm`) or in a thread (`tap serve`).

`MitmProxy` builds a `mitmproxy.master.Master` with mitmproxy's default addons and `TapAddon`,
sets its options programmatically (`mode`, `listen_host`, `confdir`, upstream verification) and
brings its servers up on the current loop; a server that cannot start (a port in use, say) is a
`TapError` naming the mode and the reason, not mitmproxy's `sys.exit`.  Modes: `regular@PORT`
(the forward proxy for `HTTPS_PROXY`) and one `reverse:URL@PORT` per upstream; they share one
master, one CA and one addon.  Port 0 picks a free port (`addresses` says which).

`MitmThread` runs a `MitmProxy` on its own event loop in a daemon thread, for `tap serve`:
mitmproxy changes loop-wide settings while it runs (its exception handler), which must not reach
the aiohttp server, and the addon reaches the interceptor on the server's loop (bridges.mitm.link).

Logging: mitmproxy's own loggers are set to WARNING (it logs every client connection at INFO), and
its TLS handshake failure lines are left to the addon, which logs each failure once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mitmproxy import addons, master, options

from bridges.mitm.addon import TapAddon
from bridges.mitm.ca import CaFiles, confdir_of, ensure_ca
from bridges.mitm.hosts import HostPolicy, ReverseTarget
from bridges.mitm.link import CoreLink
from tap.config import MitmConfig
from tap.errors import ConfigError, TapError

log = logging.getLogger("tap.mitm")
START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class MitmSettings:
    """What to run: listen address, modes, intercepted hosts, conf dir (see config.toml [mitm])."""

    host: str = "127.0.0.1"
    regular_port: int | None = 8080
    reverse: tuple[ReverseTarget, ...] = ()
    hosts: tuple[str, ...] = ("api.anthropic.com", "api.openai.com")
    confdir: Path = field(default_factory=lambda: Path("~/.mitmproxy").expanduser())
    upstream_ca: str = ""

    @classmethod
    def from_config(cls, config: MitmConfig, data_dir: Path) -> MitmSettings:
        """The settings of a `[mitm]` table; ConfigError naming the key for a bad value."""
        try:
            reverse = tuple(ReverseTarget.parse(spec) for spec in config.reverse)
        except ValueError as exc:
            raise ConfigError(f"mitm.reverse: {exc}") from None
        settings = cls(
            host=config.host,
            regular_port=config.port if config.regular else None,
            reverse=reverse,
            hosts=tuple(config.hosts),
            confdir=confdir_of(config.confdir, data_dir),
            upstream_ca=str(Path(config.upstream_ca).expanduser()) if config.upstream_ca else "",
        )
        try:
            settings.policy()
        except ValueError as exc:
            raise ConfigError(f"mitm.hosts: {exc}") from None
        return settings

    def modes(self) -> list[str]:
        """mitmproxy `mode` specs."""
        regular = [] if self.regular_port is None else [f"regular@{self.regular_port}"]
        return regular + [target.mode for target in self.reverse]

    def policy(self) -> HostPolicy:
        """The intercepted hosts (reverse targets included)."""
        return HostPolicy.parse(self.hosts, self.reverse)


@dataclass(frozen=True)
class Listening:
    """One running mitmproxy server."""

    mode: str
    host: str
    port: int

    @property
    def url(self) -> str:
        """`http://host:port`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


class _TlsLines(logging.Filter):
    """Drops mitmproxy's own TLS handshake failure lines: the addon logs each failure once, with
    the flow or the host it concerns and what to do (bridges.mitm.addon)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("Client TLS handshake failed", "Server TLS handshake failed"))


_TLS_LINES = _TlsLines()


def quiet_mitmproxy() -> None:
    """mitmproxy logs at WARNING and above, without the lines the addon replaces (idempotent)."""
    logging.getLogger("mitmproxy").setLevel(logging.WARNING)
    server = logging.getLogger("mitmproxy.proxy.server")
    if _TLS_LINES not in server.filters:
        server.addFilter(_TLS_LINES)


def _default_addons() -> list[Any]:
    make: Any = addons.default_addons
    return list(make())


def _proxyserver(running: master.Master) -> Any:
    manager: Any = running.addons
    return manager.get("proxyserver")


class MitmProxy:
    """mitmproxy with the tap addon on the current event loop."""

    def __init__(self, settings: MitmSettings, core: CoreLink) -> None:
        self.settings = settings
        self.core = core
        self.ca: CaFiles | None = None
        self.master: master.Master | None = None
        self.addon: TapAddon | None = None
        self.listening: list[Listening] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> list[Listening]:
        """Create the CA if needed, start the servers; TapError when one cannot start."""
        modes = self.settings.modes()
        if not modes:
            raise TapError("mitm: nothing to run (no regular port and no reverse upstream); see [mitm] in config.toml")
        quiet_mitmproxy()
        self.ca = await asyncio.to_thread(ensure_ca, self.settings.confdir)
        opts: Any = options.Options()  # mitmproxy's option and addon managers are untyped
        self.master = master.Master(opts, event_loop=asyncio.get_running_loop())
        self.addon = TapAddon(self.core, self.settings.policy())
        manager: Any = self.master.addons
        manager.add(*_default_addons(), self.addon)
        try:
            opts.update(
                mode=modes,
                listen_host=self.settings.host,
                confdir=str(self.settings.confdir),
                ssl_verify_upstream_trusted_ca=self.settings.upstream_ca or None,
            )
        except Exception as exc:  # mitmproxy's OptionsError: a bad mode, the same port twice
            raise TapError(f"mitm: {exc}") from None
        proxyserver = _proxyserver(self.master)
        if not await proxyserver.setup_servers():
            failed = [f"{s.mode.description} ({s.mode.full_spec}): {s.last_exception}" for s in proxyserver.servers]
            await self._shutdown_servers()
            raise TapError("mitm: cannot start " + "; ".join(f for f in failed if not f.endswith("None")))
        await self.master.running()
        self.listening = [
            Listening(s.mode.full_spec, *s.listen_addrs[0][:2]) for s in proxyserver.servers if s.listen_addrs
        ]
        return self.listening

    async def _shutdown_servers(self) -> None:
        if self.master is not None:
            await _proxyserver(self.master).servers.update([])

    async def stop(self) -> None:
        """Stop listening and let mitmproxy's addons finish (idempotent)."""
        if self.master is None:
            return
        current, self.master = self.master, None
        try:
            await _proxyserver(current).servers.update([])
            await current.done()
        except Exception:
            log.exception("mitm: error while stopping")

    def status(self) -> dict[str, object]:
        """For /tap/status: where it listens, the hosts it intercepts, flows intercepted."""
        return {
            "listening": {item.mode: item.url for item in self.listening},
            "hosts": self.settings.policy().describe(),
            "flows": self.addon.flows if self.addon is not None else 0,
            "ca": str(self.ca.cert) if self.ca is not None else "",
        }

    def url_of(self, mode_prefix: str) -> str:
        """The URL of the first server whose mode starts with `mode_prefix` ("" when none)."""
        found = next((item for item in self.listening if item.mode.startswith(mode_prefix)), None)
        return found.url if found else ""


class MitmThread:
    """A `MitmProxy` on its own loop in a daemon thread (`tap serve` with `[mitm] enabled`)."""

    def __init__(self, settings: MitmSettings, core: CoreLink) -> None:
        self.proxy = MitmProxy(settings, core)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tap-mitm", daemon=True)

    def start(self, timeout: float = START_TIMEOUT_S) -> Sequence[Listening]:
        """Start the thread and wait until mitmproxy listens; TapError when it cannot."""
        self._thread.start()
        if not self._started.wait(timeout):
            raise TapError(f"mitm: did not start within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self.proxy.listening

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            await self.proxy.start()
        except BaseException as exc:
            self._error = exc if isinstance(exc, TapError) else TapError(f"mitm: {type(exc).__name__}: {exc}")
            self._started.set()
            return
        self._started.set()
        try:
            await self._stop.wait()
        finally:
            await self.proxy.stop()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop mitmproxy and wait for the thread (bounded)."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:  # the loop already ended
                pass
        if self._thread.is_alive():
            self._thread.join(timeout)
