"""The test process never reaches past loopback: a connection or a name lookup outside it fails the test.

``socket.socket.connect``/``connect_ex``, ``socket.create_connection`` and ``socket.getaddrinfo`` are
wrapped for the whole session (every xdist worker loads this plugin). A call outside loopback does what
it does on an offline machine (``OSError`` ENETUNREACH from a connect, that number from ``connect_ex``,
``socket.gaierror`` from a name lookup, which would send a DNS query) and is recorded; the test during
which it happened then fails naming the address, even when the code caught the error. An address
literal is no lookup. The ``dns`` fixture's made-up names are answered before a lookup reaches this
guard. Subprocesses the tests start run offline on their own and are not covered here.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import threading
from typing import Any, Iterator

import pytest

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


_seen: list[str] = []
_seen_lock = threading.Lock()


def is_local(host: object) -> bool:
    """Loopback (127/8, ::1, also IPv4-mapped), the unspecified address, or a name for this machine."""
    if host is None:
        return True  # getaddrinfo(None, port): the local wildcard
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].rstrip(".").lower()
    if name in LOCAL_NAMES or name == "":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _record(what: str) -> str:
    message = f"the test process tried to {what}, outside loopback (tests must not touch the network)"
    with _seen_lock:
        _seen.append(message)
    return message


def _refuse(what: str) -> OSError:
    return OSError(errno.ENETUNREACH, _record(what))


def _is_address(host: object) -> bool:
    text = host.decode("ascii", "replace") if isinstance(host, bytes) else str(host)
    try:
        ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def _check_address(family: int, address: Any, how: str) -> None:
    if family not in (socket.AF_INET, socket.AF_INET6):
        return  # a Unix socket, a socketpair: local by nature
    host, port = (address[0], address[1]) if isinstance(address, tuple) and len(address) >= 2 else (address, None)
    if not is_local(host):
        raise _refuse(f"{how} {host}:{port}")


@pytest.fixture(scope="session", autouse=True)
def _loopback_only_session() -> Iterator[None]:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create_connection = socket.create_connection
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(self.family, address, "connect to")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        try:
            _check_address(self.family, address, "connect to")
        except OSError as refused:
            return refused.errno or errno.ENETUNREACH  # connect_ex answers with the error number
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        # A name goes through the (guarded) getaddrinfo, so the dns fixture's made-up names work here too.
        host, port = address[0], address[1]
        if _is_address(host) and not is_local(host):
            raise _refuse(f"open a connection to {host}:{port}")
        return real_create_connection(address, *args, **kwargs)

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list:
        if not is_local(host) and not _is_address(host):
            raise socket.gaierror(socket.EAI_NONAME, _record(f"look up the name {host!r} (port {port})"))
        return real_getaddrinfo(host, port, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", connect)
        patch.setattr(socket.socket, "connect_ex", connect_ex)
        patch.setattr(socket, "create_connection", create_connection)
        patch.setattr(socket, "getaddrinfo", getaddrinfo)
        yield


def _take() -> list[str]:
    with _seen_lock:
        tried, _seen[:] = list(dict.fromkeys(_seen)), []
    return tried


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail the test whose body reached past loopback (caught by the code or not)."""
    _take()
    result = yield
    tried = _take()
    if tried:
        pytest.fail("\n".join(tried), pytrace=False)
    return result


@pytest.fixture(autouse=True)
def _loopback_only(_loopback_only_session: None) -> Iterator[None]:
    """The same for the test's fixtures (a server started in setup, a client closed in teardown)."""
    _take()
    yield
    tried = _take()
    if tried:
        pytest.fail("\n".join(tried), pytrace=False)
