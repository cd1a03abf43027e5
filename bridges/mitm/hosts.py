"""Which connections the mitmproxy addon intercepts: the configured API hosts, and nothing else.

An entry is `host` (any port) or `host:port` (`[v6addr]:port` for IPv6), compared case-insensitively
without a trailing dot.  Reverse-mode targets are always intercepted (their host is added).  Every
other host passes through untouched: its TLS is never terminated (the addon's `tls_clienthello`
hook tells mitmproxy to ignore the connection, so the client talks to the real server with the
real certificate) and its plain-HTTP traffic is streamed through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


def split_entry(entry: str) -> tuple[str, int | None]:
    """`host[:port]` → (lower-case host, port or None); ValueError for an empty or bad entry."""
    text = entry.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end == -1:
            raise ValueError(f"bad host {entry!r}: unclosed '['")
        host, rest = text[1:end], text[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else rest
    elif text.count(":") == 1:
        host, port_text = text.split(":", 1)
    else:
        host, port_text = text, ""
    host = host.rstrip(".")
    if not host or any(c.isspace() or c in "/@" for c in host):
        raise ValueError(f"bad host {entry!r}: expected host or host:port")
    if not port_text:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad host {entry!r}: the port must be 1-65535")
    return host, int(port_text)


@dataclass(frozen=True)
class ReverseTarget:
    """One reverse-mode listener: clients talk plain HTTP to `listen_port`, tap forwards to `url`."""

    url: str
    listen_port: int

    @classmethod
    def parse(cls, spec: str) -> ReverseTarget:
        """`https://api.anthropic.com@8082` → the target; ValueError naming what is wrong."""
        url, sep, port = spec.strip().rpartition("@")
        parts = urlsplit(url)
        if not sep or parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"bad reverse spec {spec!r}: expected http(s)://HOST[:PORT]@LISTEN_PORT")
        if parts.path.strip("/") or parts.query:
            raise ValueError(f"bad reverse spec {spec!r}: the upstream URL must not have a path")
        if not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError(f"bad reverse spec {spec!r}: the listen port must be 0-65535")
        return cls(f"{parts.scheme}://{parts.netloc}", int(port))

    @property
    def host(self) -> tuple[str, int]:
        """The upstream's (host, port)."""
        parts = urlsplit(self.url)
        assert parts.hostname is not None
        return parts.hostname.lower(), parts.port or DEFAULT_PORTS[parts.scheme]

    @property
    def mode(self) -> str:
        """The mitmproxy `--mode` spec."""
        return f"reverse:{self.url}@{self.listen_port}"


@dataclass(frozen=True)
class HostPolicy:
    """The hosts the addon intercepts (see the module docstring)."""

    names: frozenset[str]
    addresses: frozenset[tuple[str, int]]

    @classmethod
    def parse(cls, entries: Iterable[str], reverse: Iterable[ReverseTarget] = ()) -> HostPolicy:
        """The policy for `entries` plus the reverse targets; ValueError for a bad entry."""
        names: set[str] = set()
        addresses: set[tuple[str, int]] = {target.host for target in reverse}
        for entry in entries:
            host, port = split_entry(entry)
            if port is None:
                names.add(host)
            else:
                addresses.add((host, port))
        return cls(frozenset(names), frozenset(addresses))

    def intercepts(self, host: str, port: int | None) -> bool:
        """Whether a connection to host:port is intercepted."""
        name = host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")
        return name in self.names or (port is not None and (name, port) in self.addresses)

    def describe(self) -> str:
        """The hosts, for start-up lines."""
        entries = sorted(self.names) + sorted(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.addresses)
        return ", ".join(entries) or "(none)"
