"""A throwaway certificate authority for the tests' TLS servers, and server certificates it signs: made at test
time with the ``openssl`` binary (Debian's; the tests that need it skip without it), EC keys, valid two days.

A certificate names only its subjectAltName: ``IP:127.0.0.1`` is not for a client that connects to
``localhost``, and ``DNS:pinned.example`` not for one that connects to the address.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = placeholder
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
subjectAltName = $ENV::SAN
"""
_NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


class TestCA:
    """A CA in ``folder``: ``cert`` is what a client trusts; ``issue`` signs a server's certificate."""

    __test__ = False  # not a test class

    def __init__(self, openssl: str, folder: Path, name: str) -> None:
        self.openssl, self.folder = openssl, folder
        self.config = folder / "openssl.cnf"
        self.config.write_text(_CONFIG, encoding="ascii")
        self.cert, self.key = folder / "ca.pem", folder / "ca.key"
        self._serials = itertools.count(1)
        authority = ("-extensions", "ca", "-subj", f"/CN={name}", "-days", "2")
        self._run("req", "-x509", *_NEW_KEY, *authority, "-keyout", str(self.key), "-out", str(self.cert))

    def issue(self, name: str, san: str) -> tuple[Path, Path]:
        """A server certificate for ``san`` (``IP:127.0.0.1``, ``DNS:pinned.example``): its files (cert, key)."""
        cert, key, request = (self.folder / f"{name}.{ext}" for ext in ("pem", "key", "csr"))
        self._run("req", "-new", *_NEW_KEY, "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(request))
        signer = ("-CA", str(self.cert), "-CAkey", str(self.key), "-set_serial", str(next(self._serials)))
        leaf = ("-days", "2", "-extfile", str(self.config), "-extensions", "leaf")
        self._run("x509", "-req", "-in", str(request), *signer, *leaf, "-out", str(cert), san=san)
        return cert, key

    def _run(self, *args: str, san: str = "unused") -> None:
        config = ("-config", str(self.config)) if args[0] == "req" else ()
        subprocess.run([self.openssl, *args, *config], check=True, capture_output=True, timeout=60, env={"SAN": san})


def make_ca(folder: Path, name: str = "test CA") -> TestCA | None:
    """A new CA in ``folder``; None without the ``openssl`` binary (the test skips)."""
    openssl = shutil.which("openssl")
    return TestCA(openssl, folder, name) if openssl else None
