"""Mutations of the telegram channel (messaging_llm_bot/channels/telegram/)."""

from __future__ import annotations

from mutation_list.common import BOT, BUSY, TELEGRAM, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    # -- Telegram: allowlist and owner-only commands (channels/telegram/access.py, intake.py, commands.py) -----
    Mutation(
        "telegram-group-is-owner",
        f"{BOT}/channels/telegram/access.py",
        'user is not None and user.id == self.settings.owner, chat is not None and chat.type == "private"',
        'user is not None and user.id == self.settings.owner, chat is not None and chat.type != "channel"',
        "the owner's group chats see the owner's data",
        TELEGRAM,
    ),
    Mutation(
        "telegram-persist-strangers",
        f"{BOT}/channels/telegram/intake.py",
        "if message is None or not self.access.allowed(message.from_user) or is_command(message):",
        "if message is None or is_command(message):",
        "a stranger's message is written to the inbox before the gate refuses it",
        TELEGRAM,
    ),
    Mutation(
        "telegram-userless-passes",
        f"{BOT}/channels/telegram/access.py",
        "            await self._refuse(update, context.bot, user)\n        raise ApplicationHandlerStop",
        "            await self._refuse(update, context.bot, user)\n            raise ApplicationHandlerStop",
        "an update without a user (a channel post) passes the gate",
        TELEGRAM,
    ),
    Mutation(
        "doctor-telegram-checked-when-unused",
        f"{BOT}/channels/telegram/doctor.py",
        "        return []  # Telegram is not used",
        "        pass",
        "a bot on Signal only is warned about Telegram's token and empty allowlist (noise where nothing is wrong)",
        ("test_doctor.py",),
    ),
    Mutation(
        "busy-never-joins",
        f"{BOT}/channels/telegram/intake.py",
        "            joinable(message),",
        "            False,",
        "busy mode steer does nothing: a correction waits behind the answer it was meant to change",
        BUSY,
    ),
    Mutation(
        "busy-group-joins",
        f"{BOT}/channels/telegram/turn.py",
        '    return message.chat.type == "private" and message_kind(message) == "text"',
        '    return message_kind(message) == "text"',
        "messages in a group are merged into a running turn",
        BUSY,
    ),
    Mutation(
        "telegram-start-gives-up-at-one-timeout",
        f"{BOT}/channels/telegram/bot.py",
        "                if attempt == START_ATTEMPTS:",
        "                if True:",
        "a Bot API answering getMe late once at start-up (slow network, loaded machine) ends the bot with exit 1",
        ("test_telegram_lifecycle.py",),
    ),
    Mutation(
        "telegram-confirmed-before-synced",
        f"{BOT}/channels/telegram/intake.py",
        "        return min(offset, self._unconfirmed)",
        "        return offset",
        "while the inbox cannot fsync a polled message, Telegram is told it arrived: a power loss loses it",
        ("test_reliability_disk.py",),
    ),
)
