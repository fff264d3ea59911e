"""The two Bot API calls setup and doctor need (``getMe``, ``getUpdates``), over plain HTTP.

The running bot uses python-telegram-bot; these one-shot checks need no event loop.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import requests

from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request, deadline_session
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.channels.setup import FirstSender
from messaging_llm_bot.channels.telegram.settings import OFFICIAL_BASE_URL

#: A Bot API answer to getMe/getUpdates larger than this is refused.
MAX_ANSWER_BYTES = 8 * 1024 * 1024


@functools.cache
def _session() -> requests.Session:
    return deadline_session()


@dataclass
class ApiAnswer:
    """One Bot API call: ``ok`` with its ``result``, or a one-line ``error`` (never the token)."""

    ok: bool
    result: Any = None  # the answer's JSON: getMe's object, getUpdates' list
    error: str = ""
    status: int | None = None


def call(
    token: str, method: str, params: JsonObject | None = None, *, base_url: str | None = None, timeout: float = 10.0
) -> ApiAnswer:
    """POST ``{base_url}{token}/{method}``; never raises, never puts the token in the error."""
    base = base_url or OFFICIAL_BASE_URL
    try:
        # ``timeout`` bounds the whole exchange (a trickling answer too), not each read.
        response = bounded_request(
            _session(),
            "POST",
            f"{base}{token}/{method}",
            seconds=timeout,
            max_bytes=MAX_ANSWER_BYTES,
            json=params or {},
        )
    except DeadlineExceeded:
        return ApiAnswer(False, error=f"the Bot API at {base} did not answer within {timeout:g} s")
    except (requests.RequestException, BodyTooLarge, OSError) as exc:
        reason = type(exc).__name__
        return ApiAnswer(False, error=f"cannot reach the Bot API at {base} ({reason})")
    try:
        body = response.json()
        if not isinstance(body, dict):
            raise ValueError("not an object")
    except ValueError:
        return ApiAnswer(
            False,
            status=response.status,
            error=f"the Bot API at {base} answered HTTP {response.status}, not JSON",
        )
    if response.status == 401:
        return ApiAnswer(
            False, status=401, error="the Bot API refused the token (401 Unauthorized): copy it again from @BotFather"
        )
    if not body.get("ok"):
        return ApiAnswer(False, status=response.status, error=f"{method}: {body.get('description') or response.status}")
    return ApiAnswer(True, body.get("result"), status=response.status)


def get_me(token: str, *, base_url: str | None = None, timeout: float = 10.0) -> ApiAnswer:
    """``getMe``: the bot's own user (``username``, ``first_name``)."""
    return call(token, "getMe", base_url=base_url, timeout=timeout)


def senders(updates: list[JsonObject]) -> list[FirstSender]:
    """The distinct private-chat senders of ``getUpdates`` results, newest last."""
    found: dict[int, FirstSender] = {}
    for update in updates or []:
        message = update.get("message") or update.get("edited_message") or {}
        user = message.get("from") or {}
        if not isinstance(user.get("id"), int) or user.get("is_bot"):
            continue
        name = (
            " ".join(p for p in (user.get("first_name"), user.get("last_name")) if p)
            or user.get("username")
            or str(user["id"])
        )
        found.pop(user["id"], None)
        found[user["id"]] = FirstSender(str(user["id"]), name, message.get("text") or "")
    return list(found.values())
