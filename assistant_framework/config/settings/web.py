"""The ``web`` section: the owner's web page, its address, token and bounds."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from assistant_framework.config.settings.fields import flag, number, reads, strings, text, whole
from assistant_framework.config.settings.readers import Reader


def _proxy_addresses(value: Any) -> tuple[str, ...]:
    entries = tuple(entry.strip() for entry in strings(value))
    for entry in entries:
        ipaddress.ip_network(entry, strict=False)
    return entries


#: A list of addresses or networks (``10.0.0.0/8``); an entry that is neither is an error naming it.
proxy_addresses: Reader[tuple[str, ...]] = Reader(_proxy_addresses, strings.schema)


@dataclass(frozen=True)
class WebSettings:
    """The ``web`` section (docs/web.md)."""

    enabled: bool = field(default=False, metadata=reads(flag))
    #: The Chat page (messaging_llm_bot/channels/webchat/): the owner talks to the assistant on the page.
    chat: bool = field(default=False, metadata=reads(flag))
    host: str = field(default="127.0.0.1", metadata=reads(text, min_length=1))
    #: 0 picks a free port.
    port: int = field(default=8765, metadata=reads(whole, minimum=0, maximum=65535))
    #: Empty: one is generated into ``state/web/token`` on first use.
    token: str = field(default="", repr=False, metadata=reads(text))
    max_connections: int = field(default=64, metadata=reads(whole, minimum=1))
    max_body_bytes: int = field(default=4 * 1024 * 1024, metadata=reads(whole, minimum=1024))
    header_timeout_seconds: float = field(default=10.0, metadata=reads(number, above=0))
    body_timeout_seconds: float = field(default=30.0, metadata=reads(number, above=0))
    #: The proxies whose ``X-Forwarded-For`` names the client (addresses or networks); none: the header is ignored.
    trusted_proxies: tuple[str, ...] = field(
        default=(), metadata=reads(proxy_addresses, each={"minLength": 1}, schema={"maxItems": 64})
    )
