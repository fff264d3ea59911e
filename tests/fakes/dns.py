"""A fake name resolver for made-up host names, shaped like ``socket.getaddrinfo``.

Each name answers its records in turn, one answer per lookup (the last one repeats); an answer is
one address or a list of them. Installed as ``socket.getaddrinfo`` (the ``dns`` fixture in
conftest) it also sees any second lookup made behind the code's back, e.g. by urllib3 at connect
time, so a test can count lookups and give a rebinding answer. Other names go to the real resolver.
"""

from __future__ import annotations

import socket
from typing import Callable


class FakeDNS:
    """``answers``: name -> [answer of the 1st lookup, of the 2nd, ...]; ``calls``: names looked up."""

    def __init__(self, answers: dict[str, list[str | list[str]]], real: Callable = socket.getaddrinfo) -> None:
        self.answers, self.real, self.calls = answers, real, []

    def __call__(self, host, port, *args, **kwargs):
        if host not in self.answers:
            return self.real(host, port, *args, **kwargs)
        turn = self.calls.count(host)
        self.calls.append(host)
        answer = self.answers[host][min(turn, len(self.answers[host]) - 1)]
        addresses = [answer] if isinstance(answer, str) else answer
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0))
            if ":" in address
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
            for address in addresses
        ]


def loopback_usable(address: str = "127.0.0.2") -> bool:
    """True when this machine lets a server bind ``address`` (Linux routes all of 127/8 to loopback)."""
    try:
        with socket.socket() as probe:
            probe.bind((address, 0))
        return True
    except OSError:
        return False
