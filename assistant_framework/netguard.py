"""Refuse URLs that point into the owner's own network unless configured.

A network skill that fetches what the model asks for must not become a way to
reach the router, a local admin page or the model server itself.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit


class BlockedURLError(ValueError):
    """A URL that a network skill may not fetch; the message says why."""


def check_url(url: str, *, allow_private: bool = False, resolve: bool = True) -> str:
    """Return the URL when it may be fetched; raise BlockedURLError naming it otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise BlockedURLError(f"URL {url!r}: only http and https are allowed")
    host = parts.hostname
    if not host:
        raise BlockedURLError(f"URL {url!r} has no host")
    if allow_private:
        return url
    addresses = _addresses(host, resolve)
    for address in addresses:
        if _is_internal(address):
            raise BlockedURLError(
                f"URL {url!r} points to an internal address ({address}); set policy.allow_private_network to allow it"
            )
    return url


def _addresses(host: str, resolve: bool) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    if host.lower() in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    if not resolve:
        return []
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as exc:
        raise BlockedURLError(f"host {host!r} cannot be resolved: {exc.strerror}") from None
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]


def _is_internal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
    )
