"""tap's mitmproxy certificate authority: where it is, creating it, and how each client trusts it.

Only the regular (forward-proxy) mode needs it: mitmproxy presents a certificate for the API host
signed by this CA, so the client must trust the CA.  Reverse mode (plain HTTP to a local port)
needs none.  The CA lives in mitmproxy's conf dir (`[mitm] confdir`, default `<data dir>/mitmproxy`,
private like the rest of the data dir); its key never leaves it.

Files (mitmproxy's names, so mitmproxy itself finds them):
- `mitmproxy-ca-cert.pem` — the CA certificate alone: for trust stores that *add* certificates
  (Node and Claude Code `NODE_EXTRA_CA_CERTS`, `curl --cacert`, the system store);
- `tap-ca-bundle.pem` — the CA plus the usual public roots (certifi's): for settings that *replace*
  the trust store (Python `SSL_CERT_FILE` / `REQUESTS_CA_BUNDLE`, Codex `CODEX_CA_CERTIFICATE`),
  so hosts tap passes through untouched still verify against their real certificates.

mitmproxy is imported only to create the CA: printing where it is and how to trust it (`tap mitm
ca`, `tap env`) imports none of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import certifi

BASENAME = "mitmproxy"
CA_CERT = f"{BASENAME}-ca-cert.pem"
CA_KEY = f"{BASENAME}-ca.pem"
BUNDLE = "tap-ca-bundle.pem"
KEY_SIZE = 2048


@dataclass(frozen=True)
class CaFiles:
    """Where the CA certificate and the bundle are, and whether they were just created."""

    confdir: Path
    created: bool = False

    @property
    def cert(self) -> Path:
        """The CA certificate (PEM)."""
        return self.confdir / CA_CERT

    @property
    def bundle(self) -> Path:
        """The CA plus the public roots (PEM)."""
        return self.confdir / BUNDLE


def default_confdir(data_dir: Path) -> Path:
    """Where tap keeps mitmproxy's files unless `[mitm] confdir` says otherwise."""
    return data_dir / "mitmproxy"


def confdir_of(setting: str, data_dir: Path) -> Path:
    """mitmproxy's conf dir for a `[mitm] confdir` value ("" for the default under the data dir)."""
    return Path(setting).expanduser() if setting else default_confdir(data_dir)


def ensure_ca(confdir: Path) -> CaFiles:
    """Create the CA (once) and the bundle (whenever it is missing or older than the CA)."""
    created = False
    if not (confdir / CA_KEY).exists():
        from mitmproxy.certs import CertStore  # mitmproxy's certificate code: only to create the CA

        confdir.mkdir(parents=True, exist_ok=True)
        confdir.chmod(0o700)
        CertStore.create_store(confdir, BASENAME, KEY_SIZE, organization="tap", cn="tap mitm CA")
        created = True
    files = CaFiles(confdir, created)
    bundle, cert = files.bundle, files.cert
    if created or not bundle.exists() or bundle.stat().st_mtime < cert.stat().st_mtime:
        roots = Path(certifi.where()).read_bytes()
        tmp = bundle.with_suffix(".tmp")
        tmp.write_bytes(roots.rstrip(b"\n") + b"\n\n# tap mitm CA\n" + cert.read_bytes())
        tmp.replace(bundle)
    return files


def trust_lines(files: CaFiles, proxy_url: str) -> list[str]:
    """How each kind of client trusts the CA, as shell lines and notes."""
    cert, bundle = files.cert, files.bundle
    return [
        f"# tap's CA certificate: {cert}",
        f"# with the public roots: {bundle}",
        f"export HTTPS_PROXY={proxy_url}  # regular mode; reverse mode needs none of this",
        f"export NODE_EXTRA_CA_CERTS={cert}  # Node, Claude Code (adds to the built-in roots)",
        f"export SSL_CERT_FILE={bundle}  # Python: httpx, the anthropic and openai SDKs",
        f"export REQUESTS_CA_BUNDLE={bundle}  # Python requests",
        f"export CODEX_CA_CERTIFICATE={bundle}  # Codex",
        f"export CURL_CA_BUNDLE={bundle}  # curl (or: curl --cacert {cert})",
        "# system-wide (Debian/Ubuntu): sudo cp "
        f"{cert} /usr/local/share/ca-certificates/tap-mitm.crt && sudo update-ca-certificates",
    ]
