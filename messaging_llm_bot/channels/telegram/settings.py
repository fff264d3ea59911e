"""Pure rules about who and what the bot answers, read from the runtime's current ``telegram`` record: a
``/reload`` changes the allowlist, the owner and the group mode at once."""

from __future__ import annotations

import re

import telegram

from assistant_framework.inbox import InboxItem


def conversation_id(chat_id: int, topic: int | None = None) -> str:
    """The Agent conversation id of a Telegram chat (``tg:7``), or of a forum topic in it (``tg:-1005:12``)."""
    return f"tg:{chat_id}" if topic is None else f"tg:{chat_id}:{topic}"


def chat_of(conversation: str) -> int:
    """The chat id of a conversation id (``tg:-1005:12`` -> ``-1005``), or of a chat id as a row typed by hand may
    say it (``7``); ValueError for another form."""
    return int(conversation.removeprefix("tg:").split(":", 1)[0])


def topic_in(conversation: object, chat_id: int) -> int | None:
    """The forum topic of a conversation id of ``chat_id`` (``tg:-1005:12`` -> 12); None for the chat itself,
    another chat's conversation or anything else (a row typed by hand)."""
    parts = str(conversation or "").removeprefix("tg:").split(":")
    if len(parts) != 2 or parts[0] != str(chat_id):
        return None
    try:
        return int(parts[1])
    except ValueError:
        return None


def topic_of(message: telegram.Message | None) -> int | None:
    """The forum topic a message was sent in (its ``message_thread_id``), or None for none.

    Only a topic message counts: in a group without topics a reply also carries a ``message_thread_id``
    (the thread of replies), which is no topic of its own."""
    if message is None or not message.is_topic_message:
        return None
    return message.message_thread_id


def message_conversation(message: telegram.Message) -> str:
    """The conversation id of a message: its chat's, or its forum topic's."""
    return conversation_id(message.chat_id, topic_of(message))


def album_key(item: InboxItem) -> str | None:
    """The album a stored update's message belongs to (its conversation and ``media_group_id``: photos or files
    sent together, answered as one turn by conversation/albums.py), or None."""
    message = item.payload.get("message")
    group = message.get("media_group_id") if isinstance(message, dict) else None
    return f"{item.conversation_id}|{group}" if group else None


def message_of(update: telegram.Update) -> telegram.Message:
    """The update's message; ValueError for an update without one (the frontend's dispatch lets only those in)."""
    if update.message is None:
        raise ValueError(f"update {update.update_id} carries no message")
    return update.message


def message_fingerprint(message: telegram.Message) -> str:
    """What a message is (``chat/message id/unix date``): the same when Telegram re-delivers it, different
    for another message that arrives under a reused update id (another Bot API server restarts the ids)."""
    return f"{message.chat_id}/{message.message_id}/{int(message.date.timestamp())}"


def is_command(message: telegram.Message) -> bool:
    """True when the message text starts with a bot command entity. A forward is never a command: it is
    someone else's message, passed on."""
    return bool(
        message.text
        and message.forward_origin is None
        and message.entities
        and message.entities[0].type == "bot_command"
        and message.entities[0].offset == 0
    )


def command_parts(message: telegram.Message) -> tuple[str, str, str] | None:
    """``(name, bot, rest)`` of the command a message starts with, read from its ``bot_command`` entity (not the
    words): ``/Stop@Bot! now`` -> ``("Stop", "bot", "now")``; ``bot`` is "" without an ``@target``, ``rest`` the
    words after the first. None when the message is not a command."""
    if not is_command(message):
        return None
    text = message.text or ""
    name, _, target = text[1 : message.entities[0].length].partition("@")
    return name, target.lower(), " ".join(text.split(None, 1)[1:])


def command_line(message: telegram.Message) -> str:
    """A command message as the shared commands read it (conversation/commands.py): the name without its ``@bot``
    (``/Stop@Bot!`` -> ``/Stop``), then the rest (``/model@bot small`` -> ``/model small``); "" for no command."""
    parts = command_parts(message)
    return "" if parts is None else f"/{parts[0]} {parts[2]}".strip()


def for_other_bot(message: telegram.Message, bot_username: str) -> bool:
    """True for ``/cmd@otherbot``: a command addressed to another bot in the chat (not ours to answer)."""
    parts = command_parts(message)
    return parts is not None and parts[1] not in ("", (bot_username or "").lower())


def mentions_bot(message: telegram.Message, bot_username: str) -> bool:
    """True when the text or caption mentions ``@bot_username`` (any case; a ``mention`` entity is such a word)."""
    if not bot_username:
        return False
    body = (message.text or message.caption or "").lower()
    return re.search(re.escape("@" + bot_username.lower()) + r"\b", body) is not None


def addressed_to_bot(message: telegram.Message, bot_username: str, bot_id: int | None, group_mode: str) -> bool:
    """Private chats always; groups when mode is "all", or the bot is mentioned or replied to."""
    if message.chat.type == "private" or group_mode == "all" or mentions_bot(message, bot_username):
        return True
    replied = message.reply_to_message
    return bool(replied and replied.from_user and bot_id is not None and replied.from_user.id == bot_id)


def strip_mention(text: str, bot_username: str) -> str:
    """Remove ``@bot_username`` from a group message so the model sees just the request."""
    if not bot_username:
        return text
    cleaned = re.sub(r"@" + re.escape(bot_username) + r"\b", "", text, flags=re.IGNORECASE)
    return re.sub(r"[ \t]{2,}", " ", cleaned).strip() or text
