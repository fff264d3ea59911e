"""The two Bot API calls setup and doctor make (getMe, getUpdates), with python-telegram-bot's ``Bot`` over the
bot's TLS trust (as telegram/bot.py), each exchange under one deadline; a failure is one line without the token."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import telegram
from telegram.error import InvalidToken, NetworkError, TelegramError
from telegram.request import HTTPXRequest

from assistant_framework.tls import shared_context
from messaging_llm_bot.channels.setup import FirstSender
from messaging_llm_bot.channels.telegram.settings import OFFICIAL_BASE_URL

T = TypeVar("T")

#: Seconds a whole exchange may take, from the connection to the answer's last byte (a test shortens it).
TIMEOUT_SECONDS = 10.0


class Unanswered(Exception):
    """A call without its answer: the one line the user reads (never the token)."""


class _Request(HTTPXRequest):
    """PTB's request, with an answer that is not a JSON object said in one line (PTB would log its body with a
    traceback)."""

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        status, payload = await super().do_request(*args, **kwargs)
        with contextlib.suppress(ValueError):
            if isinstance(json.loads(payload), dict):
                return status, payload
        raise Unanswered(f"answered HTTP {status}, not JSON")


def with_bot(token: str, base_url: str | None, call: Callable[[telegram.Bot], Awaitable[T]]) -> T:
    """``call`` on a Bot for ``token``, the whole exchange within ``TIMEOUT_SECONDS``; Unanswered when it fails.
    setup and doctor are synchronous commands: no event loop runs in them."""
    base, timeout = base_url or OFFICIAL_BASE_URL, TIMEOUT_SECONDS
    request = _Request(read_timeout=timeout, httpx_kwargs={"verify": shared_context()})

    async def exchange() -> T:
        async with request:
            return await call(telegram.Bot(token, base_url=base, request=request, get_updates_request=request))

    try:
        return asyncio.run(asyncio.wait_for(exchange(), timeout))
    except TimeoutError:
        why = f"the Bot API at {base} did not answer within {timeout:g} s"
    except TelegramError as exc:
        if isinstance(exc.__cause__, Unanswered):
            why = f"the Bot API at {base} {exc.__cause__}"
        elif isinstance(exc, InvalidToken):
            why = "the Bot API refused the token: copy it again from @BotFather"
        elif isinstance(exc, NetworkError) and exc.__cause__ is not None:  # PTB's for httpx's errors
            why = f"cannot reach the Bot API at {base} ({type(exc.__cause__).__name__})"
        else:
            why = f"the Bot API at {base} answered: {exc.message}"
    raise Unanswered(why)


async def read_senders(bot: telegram.Bot) -> list[FirstSender]:
    """The distinct people who wrote to the bot in private (getUpdates, waiting 2 s), bots skipped, newest last;
    what was read is confirmed, so that the bot does not answer it at its first start."""
    updates = await bot.get_updates(timeout=2, allowed_updates=["message"])
    found: dict[int, FirstSender] = {}
    for update in updates:
        message = update.message or update.edited_message
        user = message.from_user if message else None
        if user is None or user.is_bot or message.chat.type != "private":
            continue
        found.pop(user.id, None)
        found[user.id] = FirstSender(str(user.id), user.full_name or user.username or str(user.id), message.text or "")
    if found:
        with contextlib.suppress(TelegramError):
            await bot.get_updates(offset=max(u.update_id for u in updates) + 1, timeout=0)
    return list(found.values())
