"""Refuse URLs that point into the owner's own network unless configured, and connect only where checked.

A network skill that fetches what the model asks for must not become a way to reach the router, a
local admin page or the model server itself. Two classic bypasses are closed at the root:

- *Parser disagreement* (``http://127.0.0.1:8080\\@8.8.8.8/``: urllib saw host 8.8.8.8, the HTTP
  client connected to 127.0.0.1). A URL is parsed once with the client's own parser (urllib3's
  ``parse_url``, which requests uses), and any URL with a backslash, whitespace, a control
  character or user info (``@``) in it, or on which urllib and urllib3 disagree about the host,
  is refused.
- *DNS rebinding* (public answer for the check, loopback for the connection). The host is
  resolved once, every address is checked, and ``GuardedSession`` connects to the checked address
  (the Host header and TLS server name stay the URL's host). Each redirect hop goes through the
  same check.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import idna  # a dependency of requests: the IDNA encoder urllib3 and requests use
import requests
from urllib3.exceptions import LocationParseError, NewConnectionError
from urllib3.util import parse_url

from assistant_framework.http_deadline import DeadlineAdapter

if TYPE_CHECKING:  # the stubs' names for what HTTPAdapter hands its pools
    from requests.adapters import _HostParams, _PoolKwargs

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., list[Any]]

#: Characters the URL parsers read differently (or that never belong in a fetched URL).
_AMBIGUOUS = re.compile(r"[\\\s\x00-\x1f\x7f]")
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Special-use ranges Python's ``is_global`` does not (yet) cover in every version.
_SPECIAL = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "100.64.0.0/10",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "::/96",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "3fff::/20",
        "5f00::/16",
        "64:ff9b:1::/48",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class BlockedURLError(ValueError):
    """A URL that a network skill may not fetch; the message says why."""


@dataclass(frozen=True)
class CheckedURL:
    """A URL parsed once, its host resolved once; ``address`` is where the connection goes."""

    url: str
    scheme: str
    host: str  # without brackets, lower case
    port: int
    addresses: tuple[str, ...]

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == _DEFAULT_PORTS[self.scheme] else f"{name}:{self.port}"


def is_internal(address: IPAddress) -> bool:
    """True for loopback, private, link-local, carrier-grade NAT and every other special-use address,
    including IPv6 forms that embed one (IPv4-mapped, 6to4, NAT64, Teredo)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is None and address.teredo:
            embedded = address.teredo[1]
        if embedded is not None and is_internal(embedded):
            return True
        if address.ipv4_mapped is not None:
            return False  # the mapped IPv4 address is public
    if any(address in network for network in _SPECIAL if network.version == address.version):
        return True
    return not address.is_global or address.is_multicast


def parse_checked(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL both parsers read alike; BlockedURLError otherwise."""
    if not isinstance(url, str) or _AMBIGUOUS.search(url):
        raise BlockedURLError(f"URL {url!r} holds a backslash, space or control character; refused")
    try:
        parts = parse_url(url)
    except LocationParseError as exc:
        raise BlockedURLError(f"URL {url!r} cannot be parsed: {exc}") from None
    scheme = (parts.scheme or "").lower()
    if scheme not in _DEFAULT_PORTS:
        raise BlockedURLError(f"URL {url!r}: only http and https are allowed")
    if parts.auth is not None or "@" in (parts.netloc or "") or "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        raise BlockedURLError(f"URL {url!r} has user info ('@') in its address; refused")
    host = (parts.host or "").strip("[]").lower()
    if not host:
        raise BlockedURLError(f"URL {url!r} has no host")
    other = (urlsplit(url).hostname or "").lower()
    if other != host and not other.isascii():
        # urllib3 writes a non-ASCII name in its IDNA form (xn--...), urllib keeps it as typed;
        # compare the same form (idna is what urllib3 and requests use for it).
        try:
            other = idna.encode(other, uts46=True).decode("ascii")
        except idna.IDNAError:
            pass
    if other != host:
        raise BlockedURLError(f"URL {url!r} is ambiguous (host {host!r} or {other!r}); refused")
    return scheme, host, parts.port or _DEFAULT_PORTS[scheme]


def resolve_url(url: str, *, allow_private: bool = False, resolver: Resolver | None = None) -> CheckedURL:
    """Parse, resolve once and check every address; BlockedURLError naming the URL otherwise."""
    scheme, host, port = parse_checked(url)
    addresses = _resolve(host, port, resolver or socket.getaddrinfo)
    if not allow_private:
        for address in addresses:
            if is_internal(ipaddress.ip_address(address)):
                raise BlockedURLError(
                    f"URL {url!r} points to an internal address ({address}); "
                    "set policy.allow_private_network to allow it"
                )
    return CheckedURL(url=url, scheme=scheme, host=host, port=port, addresses=tuple(addresses))


def check_url(url: str, *, allow_private: bool = False, resolve: bool = True) -> str:
    """Return the URL when it may be fetched; raise BlockedURLError naming it otherwise.

    Only a check: to fetch, use ``GuardedSession`` so the connection goes to the checked address."""
    if not resolve:
        _scheme, host, _ = parse_checked(url)
        try:
            literal: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
        except ValueError:
            literal = ipaddress.ip_address("127.0.0.1") if _is_localhost(host) else None
        if literal is not None and not allow_private and is_internal(literal):
            raise BlockedURLError(
                f"URL {url!r} points to an internal address ({literal}); set policy.allow_private_network to allow it"
            )
        return url
    resolve_url(url, allow_private=allow_private)
    return url


def _is_localhost(host: str) -> bool:
    host = host.lower().rstrip(".")  # "LOCALHOST." is the same name
    return host in ("localhost", "localhost.localdomain") or host.endswith(".localhost")


def _resolve(host: str, port: int, resolver: Resolver) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    if _is_localhost(host):
        return ["127.0.0.1"]
    try:
        infos = resolver(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise BlockedURLError(f"host {host!r} cannot be resolved: {getattr(exc, 'strerror', None) or exc}") from None
    found = list(dict.fromkeys(str(ipaddress.ip_address(info[4][0].split("%")[0])) for info in infos))
    if not found:
        raise BlockedURLError(f"host {host!r} has no address")
    return found


#: How many of a name's checked addresses a fetch tries before it gives up.
MAX_ADDRESSES_TRIED = 3


def _not_connected(exc: requests.exceptions.ConnectionError) -> bool:
    """True when the request never left: the connection was refused, unreachable or timed out."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, NewConnectionError)


class _PinnedAdapter(DeadlineAdapter):
    """Connects each (scheme, host, port) to the address checked for it; an unchecked host is refused.
    Its connections are cut when the caller's ``http_deadline.Deadline`` passes."""

    def __init__(self) -> None:
        super().__init__(max_retries=0)
        self.pins: dict[tuple[str, str, int], CheckedURL] = {}

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: Any, cert: Any = None
    ) -> tuple[_HostParams, _PoolKwargs]:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        scheme = host_params["scheme"]
        port = host_params["port"] or _DEFAULT_PORTS.get(scheme, 0)  # requests: None when the URL names no port
        key = (scheme, str(host_params["host"]).strip("[]").lower(), port)
        checked = self.pins.get(key)
        if checked is None:
            raise BlockedURLError(f"connection to {key[1]!r} was not checked; refused")
        host_params["host"] = checked.address
        if checked.scheme == "https":  # the certificate must still match the name, not the address
            # urllib3's pools take these; the stub's _PoolKwargs lists only the certificate keys requests sets.
            pool_kwargs["server_hostname"] = checked.host  # type: ignore[typeddict-unknown-key]
            pool_kwargs["assert_hostname"] = checked.host  # type: ignore[typeddict-unknown-key]
        return host_params, pool_kwargs


class GuardedSession:
    """``requests`` for model-chosen URLs: every request checked, resolved once and pinned; no redirects
    followed (the caller checks each hop by calling ``get`` again); no proxies from the environment."""

    def __init__(self, *, allow_private: bool = False, resolver: Resolver | None = None) -> None:
        self.allow_private = allow_private
        self.resolver = resolver
        self.session = requests.Session()
        self.session.trust_env = False  # a proxy would resolve the name again, unchecked
        self.adapter = _PinnedAdapter()
        self.session.mount("http://", self.adapter)
        self.session.mount("https://", self.adapter)

    def get(self, url: str, **kwargs: Any) -> requests.Response:
        """GET one URL (no redirects followed); BlockedURLError when it may not be fetched."""
        checked = resolve_url(url, allow_private=self.allow_private, resolver=self.resolver)
        headers = {**(kwargs.pop("headers", None) or {}), "Host": checked.host_header}
        # Every address was checked; try them in the resolver's order, as a plain client would
        # (an IPv6 address first on a machine without IPv6 must not fail the fetch). Only when the
        # connection could not be made (nothing was sent), and at most MAX_ADDRESSES_TRIED: a
        # hostile name with dozens of black-holed addresses must not hold the skill for minutes.
        tried = checked.addresses[:MAX_ADDRESSES_TRIED]
        for n, address in enumerate(tried):
            self.adapter.pins[(checked.scheme, checked.host, checked.port)] = replace(checked, addresses=(address,))
            try:
                return self.session.get(url, headers=headers, allow_redirects=False, **kwargs)
            except requests.exceptions.ConnectionError as exc:
                if n == len(tried) - 1 or not _not_connected(exc):
                    raise
        raise BlockedURLError(f"host {checked.host!r} has no address")  # unreachable: resolve_url never gives none

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> GuardedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
