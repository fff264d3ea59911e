"""The TLS context the bot's HTTP clients share: made once per process, not once per client.

httpx builds a fresh ``ssl.SSLContext`` for every client it makes with the default ``verify=True``: the
certifi bundle read and parsed, about 30 ms of CPU each time. The bot makes its clients at every start and
reload (Telegram two, Signal one), and the test suite starts its bots hundreds of times. ``shared_context``
gives the same trust as httpx's default (``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` when the client trusts the
environment, else certifi's bundle), made once per distinct setting. An ``SSLContext`` may be shared by any
number of connections, threads and event loops. ``shared_httpx2_context`` is the same for the MCP SDK's
httpx2 clients, whose default trust without those variables is the system's store, not certifi's.
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
