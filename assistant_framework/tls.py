"""The TLS context the bot's HTTP clients share: made once per process, not once per client.

httpx builds a fresh ``ssl.SSLContext`` for every client it makes with the default ``verify=True``: the
certifi bundle read and parsed, about 30 ms of CPU each time. The bot makes its clients at every start and
reload (Telegram two, Signal one), and the test suite starts its bots hundreds of times. ``shared_context``
gives the same trust as httpx's default (``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when the client trusts the
environment, else certifi's bundle), made once per distinct setting. An ``SSLContext`` may be shared by any
number of connections, threads and event loops. ``shared_httpx2_context`` is the same for the MCP SDK's
httpx2 clients, whose default trust without those variables is the system's store, not certifi's.

The mail clients (the email channel's IMAP and SMTP, the ``mail`` skill's SMTP, the mail collector) are the
standard library's, whose default is ``ssl.create_default_context()``: OpenSSL's default paths, which are
``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` when they are set and the system's store otherwise, read and parsed at
every call (about 20 ms of CPU with a distribution's bundle). ``system_context`` is that trust made once per
process and setting, or a private CA's file alone (``ca_file``, a server's own setting) in its place.
``certificate_refused`` is the one sentence a refused server certificate gives the user.
"""

from __future__ import annotations

import functools
import os
import ssl

import httpx


def shared_context(trust_env: bool = True) -> ssl.SSLContext:
    """What httpx's ``verify=True`` makes for a client with ``trust_env``, one per process and setting."""
    cafile = os.environ.get("SSL_CERT_FILE") if trust_env else None
    capath = os.environ.get("SSL_CERT_DIR") if trust_env and not cafile else None
    return _context(cafile or None, capath or None)


@functools.lru_cache(maxsize=8)
def _context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    if cafile:
        return ssl.create_default_context(cafile=cafile)
    if capath:
        return ssl.create_default_context(capath=capath)
    return httpx.create_ssl_context(trust_env=False)  # certifi's bundle, as httpx's default


def shared_httpx2_context(trust_env: bool = True) -> ssl.SSLContext:
    """What httpx2's ``verify=True`` makes for a client with ``trust_env`` (``SSL_CERT_FILE`` or ``SSL_CERT_DIR``
    when it trusts the environment, else the system's store), one per process and setting."""
    cafile = os.environ.get("SSL_CERT_FILE") if trust_env else None
    capath = os.environ.get("SSL_CERT_DIR") if trust_env and not cafile else None
    if cafile or capath:
        return _context(cafile or None, capath or None)  # httpcore2 makes these as ssl's default context
    return _system_context()


@functools.lru_cache(maxsize=1)
def _system_context() -> ssl.SSLContext:
    import httpcore2

    return httpcore2.default_ssl_context(_trust_env=False)


def system_context(ca_file: str = "") -> ssl.SSLContext:
    """What ``ssl.create_default_context()`` trusts (``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` as OpenSSL reads them,
    else the system's store), or with ``ca_file`` only the certificates in that PEM file; one per process and
    setting, and a ``ca_file`` changed on disk is read again. ``OSError`` (``ssl.SSLError`` is one) when
    ``ca_file`` cannot be read or holds no certificate."""
    if ca_file:
        path = os.path.abspath(os.path.expanduser(ca_file))
        found = os.stat(path)
        return _ca_file_context(path, found.st_mtime_ns, found.st_size)
    return _default_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _default_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """The arguments are the cache's key only: OpenSSL reads the two variables itself."""
    return ssl.create_default_context()


@functools.lru_cache(maxsize=8)
def _ca_file_context(path: str, mtime_ns: int, size: int) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=path)


#: OpenSSL's verify codes for a certificate no trusted CA signed, and for one made out to another name.
#: (X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, DEPTH_ZERO_SELF_SIGNED_CERT, SELF_SIGNED_CERT_IN_CHAIN,
#: UNABLE_TO_GET_ISSUER_CERT_LOCALLY, UNABLE_TO_VERIFY_LEAF_SIGNATURE; HOSTNAME_MISMATCH, IP_ADDRESS_MISMATCH)
_UNTRUSTED = frozenset({2, 18, 19, 20, 21})
_OTHER_NAME = frozenset({62, 64})


def certificate_refused(err: ssl.SSLCertVerificationError, server_key: str) -> str:
    """Why a server's certificate was refused, and what to set: ``server_key`` is the server's config section
    (``email.imap``), whose ``host`` and ``ca_file`` the sentence names."""
    why = err.verify_message or err.reason or "verification failed"
    if err.verify_code in _OTHER_NAME:
        return f"the server's certificate is not for this name ({why}): set {server_key}.host to a name it carries"
    if err.verify_code in _UNTRUSTED:
        return (
            f"the server's certificate is not trusted ({why}): set {server_key}.ca_file to the certificate "
            "(PEM) of the CA that signed it, or SSL_CERT_FILE to a bundle that holds it"
        )
    return f"the server's certificate is refused ({why})"
