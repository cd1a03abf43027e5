"""Helpers for the mitmproxy addon's tests: a test CA for TLS fake upstreams, and tap's mitm on port 0.

    certs = TestCA.create(tmp_path)                    # a CA and a leaf for localhost / 127.0.0.1
    async with FakeAnthropic(tls=certs.server_context()) as up, TapProxy(home) as tap:
        async with RunningMitm(tap, tmp_path, hosts=[f"localhost:{up.port}"], upstream_ca=certs.ca_file) as mitm:
            mitm.proxy_url        # regular mode (HTTPS_PROXY); mitm.client_context() trusts tap's CA
            mitm.reverse_url      # reverse mode, when `reverse=` was given

The certificates are generated here with `cryptography` (a mitmproxy dependency); mitmproxy's own
CA is generated in a temporary conf dir, so nothing outside the test's directory is touched.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bridges.mitm.hosts import ReverseTarget
from bridges.mitm.link import CoreLink
from bridges.mitm.runner import MitmProxy, MitmSettings
from tap.intercept.core import Interceptor


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


@dataclass(frozen=True)
class TestCA:
    """A throwaway CA and one server certificate for localhost and 127.0.0.1."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    __test__ = False  # not a pytest test class

    @classmethod
    def create(cls, where: Path, hosts: tuple[str, ...] = ("localhost",)) -> TestCA:
        where.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = (
            x509.CertificateBuilder()
            .subject_name(_name("tap test upstream CA"))
            .issuer_name(_name("tap test upstream CA"))
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = [x509.DNSName(h) for h in hosts]
        names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
        leaf = (
            x509.CertificateBuilder()
            .subject_name(_name(hosts[0]))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        files = cls(where / "upstream-ca.pem", where / "upstream-cert.pem", where / "upstream-key.pem")
        files.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        files.cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        files.key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return files

    def server_context(self) -> ssl.SSLContext:
        """The TLS context of a fake upstream using the leaf certificate."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this CA only."""
        return ssl.create_default_context(cafile=str(self.ca_file))


class RunningMitm:
    """tap's mitmproxy (regular mode on port 0, optional reverse upstreams) around an interceptor."""

    def __init__(
        self,
        interceptor: Interceptor,
        confdir: Path,
        *,
        hosts: list[str],
        upstream_ca: Path | None = None,
        reverse: list[str] | None = None,
        regular: bool = True,
    ) -> None:
        self.settings = MitmSettings(
            host="127.0.0.1",
            regular_port=0 if regular else None,
            reverse=tuple(ReverseTarget.parse(spec) for spec in reverse or []),
            hosts=tuple(hosts),
            confdir=confdir,
            upstream_ca=str(upstream_ca or ""),
        )
        self.proxy = MitmProxy(self.settings, CoreLink(interceptor))

    async def __aenter__(self) -> Self:
        await self.proxy.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.proxy.stop()

    @property
    def proxy_url(self) -> str:
        """The regular-mode proxy (what HTTPS_PROXY would name)."""
        return self.proxy.url_of("regular")

    @property
    def reverse_url(self) -> str:
        """The first reverse-mode listener."""
        return self.proxy.url_of("reverse")

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts tap's mitm CA only."""
        assert self.proxy.ca is not None
        return ssl.create_default_context(cafile=str(self.proxy.ca.cert))
