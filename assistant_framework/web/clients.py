"""Which client sent a request, for the bound on wrong tokens of each client (``auth.SignInThrottle``).

The peer's address, unless the peer is a proxy the owner named in ``web.trusted_proxies``: then the
address that proxy says it forwarded (the right-most ``X-Forwarded-For`` entry that is not itself a
trusted proxy; entries further left were written by the client and prove nothing). ``X-Forwarded-For``
from any other peer is ignored: a client can write any address there, and rotating it must not give
it a fresh bound for each guess.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

import tornado.httputil

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: ``X-Forwarded-For`` entries looked at, from the right (a chain of proxies is short).
MAX_FORWARDED_HOPS = 16


def proxy_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """The networks of ``web.trusted_proxies`` entries (an address or a CIDR); ValueError names a bad one."""
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries)


def _address(text: str) -> Address | None:
    try:
        address = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # a dual-stack socket's view of an IPv4 peer
    return address


@dataclass(frozen=True)
class ClientAddresses:
    """The proxies whose ``X-Forwarded-For`` is believed (none by default)."""

    proxies: tuple[Network, ...] = ()

    @classmethod
    def trusting(cls, entries: Iterable[str]) -> ClientAddresses:
        return cls(proxy_networks(entries))

    def trusted(self, text: str) -> bool:
        """Whether ``text`` is the address of a configured proxy."""
        address = _address(text)
        return address is not None and any(address in network for network in self.proxies)

    def client(self, peer: str, headers: tornado.httputil.HTTPHeaders) -> str:
        """The address a request comes from: ``peer``, or behind a trusted proxy the address it forwarded
        (the proxy's own address when it forwarded nothing usable)."""
        if not self.trusted(peer):
            return peer
        hops = [hop.strip() for value in headers.get_list("X-Forwarded-For") for hop in value.split(",")]
        for hop in reversed(hops[-MAX_FORWARDED_HOPS:]):
            if self.trusted(hop):
                continue
            address = _address(hop)
            return str(address) if address is not None else peer
        return peer
