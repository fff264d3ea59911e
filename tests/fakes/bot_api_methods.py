"""Bot API method implementations for :class:`tests.fakes.bot_api.FakeBotAPI`.

Each function takes ``(api, params)`` and returns the ``result`` value or raises ``ApiError``.
They run in server threads and take ``api._cond`` around any state they touch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.fakes.bot_api import MAX_CAPTION, MAX_TEXT, ApiError, _bad
from tests.fakes.bot_api_markup import check_entities, parse_text, utf16_len

if TYPE_CHECKING:
    from tests.fakes.bot_api import FakeBotAPI


def _copy(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


def _chat_id(params: dict) -> int:
    chat_id = params.get("chat_id")
    if chat_id is None or chat_id == "":
        raise _bad("chat_id is empty")
    if isinstance(chat_id, str) and not chat_id.lstrip("-").isdigit():
        raise _bad("chat not found")
    return int(chat_id)


def _rendered_text(params: dict, key: str, limit: int) -> tuple[str, list[dict]]:
    """Apply parse_mode or explicit entities to the text and check it like Telegram does."""
    raw = params.get(key)
    raw = "" if raw is None else str(raw)
    if params.get("parse_mode"):
        text, entities = parse_text(raw, params["parse_mode"])
    else:
        text, entities = raw, params.get(f"{key}_entities" if key == "caption" else "entities") or []
        check_entities(text, entities)
    if key == "text" and not text.strip():
        raise _bad("message text is empty")
    if utf16_len(text) > limit:
        raise _bad("message is too long" if key == "text" else "message caption is too long")
    return text, entities


def _store_bot_message(api: "FakeBotAPI", chat_id: int, params: dict, fields: dict) -> dict:
    with api._cond:
        msg = {
            "message_id": api._next_message_id(chat_id),
            "date": int(time.time()),
            "chat": api._chat(chat_id, "private" if chat_id > 0 else "supergroup", "owner"),
            "from": dict(api.bot_user),
            **fields,
        }
        reply = params.get("reply_parameters") or (
            {"message_id": params["reply_to_message_id"]} if params.get("reply_to_message_id") else None
        )
        if isinstance(reply, dict) and reply.get("message_id"):
            original = api._history.get(chat_id, {}).get(int(reply["message_id"]))
            if original is None and not reply.get("allow_sending_without_reply"):
                raise _bad("message to be replied not found")
            if original is not None:
                msg["reply_to_message"] = _copy(original)
        topic = _topic(api, chat_id, params)
        if topic is None and isinstance(msg.get("reply_to_message"), dict):
            # A reply to a message in a topic lands in that topic, as in Telegram.
            original = msg["reply_to_message"]
            topic = original.get("message_thread_id") if original.get("is_topic_message") else None
        if topic is not None:
            msg.update(message_thread_id=topic, is_topic_message=True)
        if params.get("reply_markup"):
            msg["reply_markup"] = params["reply_markup"]
        api._history.setdefault(chat_id, {})[msg["message_id"]] = msg
        api._bot_msgs.setdefault(chat_id, []).append(msg["message_id"])
        return _copy(msg)


def _topic(api: "FakeBotAPI", chat_id: int, params: dict) -> int | None:
    """The forum topic a send names (``message_thread_id``); 400 for one the chat does not have (caller locks)."""
    value = params.get("message_thread_id")
    if value in (None, ""):
        return None
    topic = int(value)
    if topic not in api._topics.get(chat_id, set()):
        raise _bad("message thread not found")
    if topic in api._closed_topics.get(chat_id, set()):
        raise _bad("TOPIC_CLOSED")
    return topic


def _live_bot_message(api: "FakeBotAPI", params: dict, what: str) -> dict:
    """The stored bot message addressed by chat_id + message_id (caller holds the lock)."""
    chat_id, message_id = _chat_id(params), int(params.get("message_id") or 0)
    msg = api._history.get(chat_id, {}).get(message_id)
    if msg is None or (chat_id, message_id) in api._deleted:
        raise _bad(f"message to {what} not found")
    return msg


def get_me(api: "FakeBotAPI", params: dict) -> dict:
    return dict(api.bot_user)


def delete_webhook(api: "FakeBotAPI", params: dict) -> bool:
    with api._cond:
        api._webhook_url = ""
        if params.get("drop_pending_updates") is True:
            api._updates.clear()
    return True


def set_webhook(api: "FakeBotAPI", params: dict) -> bool:
    with api._cond:
        api._webhook_url = str(params.get("url") or "")
    return True


def get_webhook_info(api: "FakeBotAPI", params: dict) -> dict:
    with api._cond:
        return {"url": api._webhook_url, "has_custom_certificate": False, "pending_update_count": len(api._updates)}


def get_updates(api: "FakeBotAPI", params: dict) -> list[dict]:
    offset = int(params.get("offset") or 0)
    limit = max(1, min(100, int(params.get("limit") or 100)))
    wait = min(float(params.get("timeout") or 0), api.long_poll_cap)
    allowed = params.get("allowed_updates") or None
    deadline = time.monotonic() + wait
    with api._cond:
        api._polls += 1
        poll = api._polls
        while True:
            if api._conflict:
                raise ApiError(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                )
            if api._webhook_url:
                raise ApiError(
                    409,
                    "Conflict: can't use getUpdates method while webhook is active; "
                    "use deleteWebhook to delete the webhook first",
                )
            if offset > 0:  # confirming: everything below the offset is gone for good
                api._updates[:] = [u for u in api._updates if u["update_id"] >= offset or _held(api, u, poll)]
            pending = api._updates[offset:] if offset < 0 else list(api._updates)
            pending = [u for u in pending if _visible(api, u, poll)]
            if allowed:
                pending = [u for u in pending if any(k in u for k in allowed)]
            remaining = deadline - time.monotonic()
            if pending or remaining <= 0 or api._stopping:
                for update in pending[:limit]:
                    if update["update_id"] in api._again:
                        api._again[update["update_id"]]["delivered"] = True
                return _copy(pending[:limit])
            api._waiting += 1
            api._changed()  # waiting_polls() went up
            try:
                api._cond.wait(remaining)
            finally:
                api._waiting -= 1


def _held(api: "FakeBotAPI", update: dict, poll: int) -> bool:
    """A redelivered update survives an offset past it until a newer poll has received it."""
    again = api._again.get(update["update_id"])
    return again is not None and (poll <= again["after"] or not again["delivered"])


def _visible(api: "FakeBotAPI", update: dict, poll: int) -> bool:
    """A redelivered update is only for polls started after ``redeliver``."""
    again = api._again.get(update["update_id"])
    return again is None or poll > again["after"]


def send_message(api: "FakeBotAPI", params: dict) -> dict:
    chat_id = _chat_id(params)
    text, entities = _rendered_text(params, "text", MAX_TEXT)
    return _store_bot_message(api, chat_id, params, {"text": text, "entities": entities})


def edit_message_text(api: "FakeBotAPI", params: dict) -> Any:
    if params.get("inline_message_id"):
        return True
    text, entities = _rendered_text(params, "text", MAX_TEXT)
    with api._cond:
        msg = _live_bot_message(api, params, "edit")
        markup = params.get("reply_markup", msg.get("reply_markup"))
        if msg.get("text") == text and (msg.get("entities") or []) == entities and msg.get("reply_markup") == markup:
            raise _bad(
                "message is not modified: specified new message content and reply markup are exactly "
                "the same as a current content and reply markup of the message"
            )
        msg.update(text=text, entities=entities, edit_date=int(time.time()))
        if markup is not None:
            msg["reply_markup"] = markup
        return _copy(msg)


def edit_message_reply_markup(api: "FakeBotAPI", params: dict) -> Any:
    if params.get("inline_message_id"):
        return True
    with api._cond:
        msg = _live_bot_message(api, params, "edit")
        markup = params.get("reply_markup")
        if msg.get("reply_markup") == markup:
            raise _bad(
                "message is not modified: specified new message content and reply markup are exactly "
                "the same as a current content and reply markup of the message"
            )
        if markup:
            msg["reply_markup"] = markup
        else:
            msg.pop("reply_markup", None)
        msg["edit_date"] = int(time.time())
        return _copy(msg)


def delete_message(api: "FakeBotAPI", params: dict) -> bool:
    with api._cond:
        msg = _live_bot_message(api, params, "delete")
        api._deleted.add((msg["chat"]["id"], msg["message_id"]))
    return True


def send_chat_action(api: "FakeBotAPI", params: dict) -> bool:
    chat_id = _chat_id(params)
    with api._cond:
        _topic(api, chat_id, params)
    if not params.get("action"):
        raise _bad("action is empty")
    return True


def set_my_commands(api: "FakeBotAPI", params: dict) -> bool:
    commands = params.get("commands")
    if not isinstance(commands, list):
        raise _bad("commands must be an array")
    with api._cond:
        api._commands = commands
    return True


def get_my_commands(api: "FakeBotAPI", params: dict) -> list:
    with api._cond:
        return _copy(api._commands)


def answer_callback_query(api: "FakeBotAPI", params: dict) -> bool:
    if not params.get("callback_query_id"):
        raise _bad("query is too old and response timeout expired or query ID is invalid")
    return True


def get_file(api: "FakeBotAPI", params: dict) -> dict:
    with api._cond:
        found = api._files.get(str(params.get("file_id") or ""))
        if found is None:
            raise _bad("invalid file_id")
        return {k: found[k] for k in ("file_id", "file_unique_id", "file_size", "file_path")}


def _make_send_file(kind: str) -> Callable[["FakeBotAPI", dict], dict]:
    def send_file(api: "FakeBotAPI", params: dict) -> dict:
        chat_id = _chat_id(params)
        value = params.get(kind)
        if isinstance(value, str) and value.startswith("attach://"):
            value = params.get(value.removeprefix("attach://"))
        if isinstance(value, dict) and "content" in value:
            ref = api.add_file(value["content"], f"{kind}s/{value['filename'] or kind}")
            if kind in ("document", "audio"):  # a Voice and a PhotoSize have no file name (Bot API)
                ref.update(file_name=value["filename"])
            if kind != "photo":
                ref.update(mime_type=value["mime_type"])
        elif isinstance(value, str) and value:
            ref = {"file_id": value, "file_unique_id": f"U-{value}"}
        else:
            raise _bad(f"there is no {kind} in the request")
        caption, entities = _rendered_text(params, "caption", MAX_CAPTION) if params.get("caption") else ("", [])
        if kind in ("voice", "audio"):  # required in a Voice and an Audio: Telegram reads it from the file
            ref.update(duration=int(params.get("duration") or 1))
        fields: dict = {kind: [{**ref, "width": 1, "height": 1}] if kind == "photo" else ref}
        if caption:
            fields.update(caption=caption, caption_entities=entities)
        return _store_bot_message(api, chat_id, params, fields)

    send_file.__name__ = f"send_{kind}"
    return send_file


_TABLE = {
    "getMe": get_me,
    "deleteWebhook": delete_webhook,
    "setWebhook": set_webhook,
    "getWebhookInfo": get_webhook_info,
    "getUpdates": get_updates,
    "sendMessage": send_message,
    "editMessageText": edit_message_text,
    "editMessageReplyMarkup": edit_message_reply_markup,
    "deleteMessage": delete_message,
    "sendChatAction": send_chat_action,
    "setMyCommands": set_my_commands,
    "getMyCommands": get_my_commands,
    "answerCallbackQuery": answer_callback_query,
    "getFile": get_file,
    "sendDocument": _make_send_file("document"),
    "sendPhoto": _make_send_file("photo"),
    "sendVoice": _make_send_file("voice"),
    "sendAudio": _make_send_file("audio"),
}
# Telegram method names are case-insensitive.
METHODS: dict[str, tuple[str, Callable[["FakeBotAPI", dict], Any]]] = {
    name.lower(): (name, fn) for name, fn in _TABLE.items()
}
