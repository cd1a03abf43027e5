"""The one HTTP client of a running `tap serve`: `tap hook` (bridges.hooks.command) and the CLI's
admin-API client (tap.cli.admin_client) both send their requests through `exchange`.

One HTTP/1.1 request per connection (`Connection: close`), the answer read to the end (a
Content-Length body, a chunked one, or up to the close), over a plain socket: tap serves plain
http, and http.client or urllib.request would import the email package and ssl, a third of a hook
process's start-up. Standard library only, and only light modules of it: a hook process imports
this before anything else (bridges.hooks).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

__all__ = ["NoAnswer", "exchange", "parse_response", "split_url"]


class NoAnswer(Exception):
    """The server could not be reached, or sent no whole answer (the message says which)."""


def split_url(url: str) -> tuple[str, int, str]:
    """(host, port, path prefix) of an `http://` URL such as `http://127.0.0.1:8787`; ValueError
    for any other URL."""
    if not url.startswith("http://"):
        raise ValueError(f"unsupported server URL {url!r} (tap serves plain http on loopback)")
    hostport, _, path = url[len("http://") :].partition("/")
    host, port = hostport, "80"
    if hostport.startswith("["):  # [::1]:8787
        host, _, rest = hostport[1:].partition("]")
        port = rest.removeprefix(":") or "80"
    elif ":" in hostport:
        host, _, port = hostport.rpartition(":")
    try:
        return host, int(port), "/" + path.strip("/") if path.strip("/") else ""
    except ValueError:
        raise ValueError(f"bad server URL {url!r}") from None


def exchange(
    url: str,
    method: str,
    path: str,
    *,
    token: str,
    body: bytes | None = None,
    query: Mapping[str, object] | None = None,
    timeout: float,
) -> tuple[int, bytes]:
    """Send one request to the server at `url` (its admin bearer token, a JSON body) and return
    the answer's (status, body), whatever the status. `query`: parameters, None values left out.
    `timeout` bounds the connection and each wait for data. NoAnswer when there is no whole
    answer, ValueError for a URL that is not plain http."""
    host, port, prefix = split_url(url)
    params = {k: v for k, v in (query or {}).items() if v is not None}
    target = f"{prefix}{path}"
    if params:
        from urllib.parse import urlencode  # the CLI's queries; a hook's path needs none (imports)

        target += f"?{urlencode(params)}"
    payload = body or b""
    head = (
        f"{method} {target} HTTP/1.1\r\nHost: {host if ':' not in host else f'[{host}]'}:{port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    # the host as bytes: a str makes the resolver load the IDNA codec (a hook process's start pays it)
    address = (host.encode("ascii", "replace"), port)
    try:
        with socket.create_connection(address, timeout=timeout) as sock:  # type: ignore[arg-type]
            sock.sendall(head.encode("latin-1") + payload)
            chunks = []
            while data := sock.recv(65536):
                chunks.append(data)
    except OSError as exc:
        raise NoAnswer(f"tap serve at {url} did not answer: {exc or type(exc).__name__}") from exc
    return parse_response(b"".join(chunks))


def parse_response(raw: bytes) -> tuple[int, bytes]:
    """(status, body) of a whole HTTP/1.1 response (Content-Length, chunked, or read to the close)."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if not sep or len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise NoAnswer("tap serve sent a malformed or incomplete answer")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines[1:])}
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        return int(parts[1]), _unchunk(rest)
    length = headers.get(b"content-length")
    return int(parts[1]), rest[: int(length)] if length is not None and length.isdigit() else rest


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0] or b"0", 16)
        except ValueError:
            raise NoAnswer("tap serve sent a malformed chunked answer") from None
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return bytes(out)
