"""The two Bot API calls setup and doctor make (getMe, getUpdates), with python-telegram-bot's ``Bot`` over the
bot's TLS trust (as telegram/bot.py), each exchange under one deadline; a failure is one line without the token,
naming the server: also an answer that is JSON but not the Bot API's (a 200 with ``"ok": false``, no ``result``,
a result PTB cannot read), where PTB would raise a bare KeyError or TypeError."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import telegram
from telegram.error import InvalidToken, NetworkError, TelegramError
from telegram.request import HTTPXRequest

from assistant_framework.config.settings.bot_api import OFFICIAL_BASE_URL
from assistant_framework.tls import shared_context
from messaging_llm_bot.ops.channels.setup import FirstSender

T = TypeVar("T")

#: Seconds a whole exchange may take, from the connection to the answer's last byte (a test shortens it).
TIMEOUT_SECONDS = 10.0


#: The question a user asks of the address when its answers are not the Bot API's.
NOT_THE_API = "is telegram.base_url a Bot API server?"


class Unanswered(Exception):
    """A call without its answer: the one line the user reads (never the token)."""


class _Request(HTTPXRequest):
    """PTB's request, with an answer that is not a JSON object, or a success without the Bot API's ``"ok": true``
    and ``result``, said in one line (PTB would log its body with a traceback, or raise KeyError: 'result')."""

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        status, payload = await super().do_request(*args, **kwargs)
        try:
            body: object = json.loads(payload)
        except ValueError:
            raise Unanswered(f"answered HTTP {status}, not JSON") from None
        success = 200 <= status <= 299
        if not isinstance(body, dict) or (success and (body.get("ok") is not True or "result" not in body)):
            raise Unanswered(f"answered HTTP {status} {_not_a_result(body)}")
        return status, payload


def _not_a_result(body: object) -> str:
    """What an answer's JSON lacks to be the Bot API's, in a few words (its description cut, on one line)."""
    if isinstance(body, dict) and body.get("ok") is False:
        description = " ".join(str(body.get("description") or "").split())[:200]
        return 'with "ok": false' + (f" ({description})" if description else "") + ", not a result"
    return f'with JSON that is not a Bot API answer (no "ok": true and "result"): {NOT_THE_API}'


class _QuietParse(logging.Filter):
    """Drops PTB's log of updates it cannot read (with a traceback and the data): the probe says it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Error while parsing updates")


def with_bot(token: str, base_url: str | None, call: Callable[[telegram.Bot], Awaitable[T]]) -> T:
    """``call`` on a Bot for ``token``, the whole exchange within ``TIMEOUT_SECONDS``; Unanswered when it fails.
    setup and doctor are synchronous commands: no event loop runs in them."""
    base, timeout = base_url or OFFICIAL_BASE_URL, TIMEOUT_SECONDS
    request = _Request(read_timeout=timeout, httpx_kwargs={"verify": shared_context()})

    async def exchange() -> T:
        async with request:
            return await call(telegram.Bot(token, base_url=base, request=request, get_updates_request=request))

    quiet, ptb = _QuietParse(), logging.getLogger("telegram.Bot")
    ptb.addFilter(quiet)
    try:
        return asyncio.run(asyncio.wait_for(exchange(), timeout))
    except TimeoutError:
        why = f"the Bot API at {base} did not answer within {timeout:g} s"
    except (KeyError, TypeError, ValueError, AttributeError):  # PTB reading a result of another shape
        why = f"the Bot API at {base} answered with a result not in the Bot API's form: {NOT_THE_API}"
    except TelegramError as exc:
        if isinstance(exc.__cause__, Unanswered):
            why = f"the Bot API at {base} {exc.__cause__}"
        elif isinstance(exc, InvalidToken):
            why = "the Bot API refused the token: copy it again from @BotFather"
        elif isinstance(exc, NetworkError) and exc.__cause__ is not None:  # PTB's for httpx's errors
            why = f"cannot reach the Bot API at {base} ({type(exc.__cause__).__name__})"
        else:
            why = f"the Bot API at {base} answered: {exc.message}"
    finally:
        ptb.removeFilter(quiet)
    raise Unanswered(why)


async def read_senders(bot: telegram.Bot) -> list[FirstSender]:
    """The distinct people who wrote to the bot in private (getUpdates, waiting 2 s), bots skipped, newest last;
    what was read is confirmed, so that the bot does not answer it at its first start."""
    updates = await bot.get_updates(timeout=2, allowed_updates=["message"])
    found: dict[int, FirstSender] = {}
    for update in updates:
        message = update.message or update.edited_message
        user = message.from_user if message else None
        if message is None or user is None or user.is_bot or message.chat.type != "private":
            continue
        found.pop(user.id, None)
        found[user.id] = FirstSender(str(user.id), user.full_name or user.username or str(user.id), message.text or "")
    if found:
        with contextlib.suppress(TelegramError):
            await bot.get_updates(offset=max(u.update_id for u in updates) + 1, timeout=0)
    return list(found.values())
