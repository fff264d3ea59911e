"""The Bot API server ``telegram.base_url`` names, as users write it: Telegram's own when it is empty."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - the record imports nothing of this module
    from assistant_framework.config.settings.chat import TelegramSettings

OFFICIAL_BASE_URL = "https://api.telegram.org/bot"
OFFICIAL_BASE_FILE_URL = "https://api.telegram.org/file/bot"


class BotApiAddressError(ValueError):
    """A Bot API server address that cannot be used; the message says what to write instead."""


def bot_api_urls(address: str) -> tuple[str, str]:
    """``(base_url, base_file_url)`` of a Bot API server from the address as users write it.

    ``http://host:8081``, ``http://host:8081/`` and ``http://host:8081/bot`` all give
    ``http://host:8081/bot`` and ``http://host:8081/file/bot`` (the layout of telegram-bot-api);
    an address without http(s):// or a host raises ``BotApiAddressError``.
    """
    text = address.strip()
    match = re.fullmatch(r"(https?)://([^/\s?#]+)(/[^\s?#]*)?", text)
    if not match or not re.fullmatch(r"[A-Za-z0-9.\-\[\]:]+", match.group(2)) or match.group(2).startswith(":"):
        raise BotApiAddressError(
            f"{address!r} is not a Bot API server address (write it as http://HOST:PORT, e.g. http://127.0.0.1:8081; "
            "the /bot at its end may be left out)"
        )
    root = f"{match.group(1)}://{match.group(2)}{(match.group(3) or '').rstrip('/').removesuffix('/bot')}"
    return f"{root}/bot", f"{root}/file/bot"


def api_urls(telegram: TelegramSettings) -> tuple[str, str]:
    """``(base_url, base_file_url)`` the bot talks to: Telegram's own, or the configured Bot API server's (an
    address ``config validate`` refuses is passed on as written: the bot then says it cannot reach it)."""
    base_url, base_file_url = OFFICIAL_BASE_URL, OFFICIAL_BASE_FILE_URL
    if telegram.base_url:
        try:
            base_url, base_file_url = bot_api_urls(telegram.base_url)
        except BotApiAddressError:
            base_url = telegram.base_url
    return base_url, telegram.base_file_url or base_file_url
