"""Mutations of the telegram channel (messaging_llm_bot/channels/telegram/)."""

from __future__ import annotations

from mutation_list.common import BOT, BUSY, TELEGRAM, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    # -- Telegram: allowlist and owner-only commands (channels/telegram/access.py, intake.py) -------------------
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
        f"{BOT}/channels/telegram/bot.py",
        "        if not self.access.allowed(update.effective_user):",
        "        if update.effective_user is not None and not self.access.allowed(update.effective_user):",
        "an update without a user (a channel post) passes the gate",
        ("test_telegram_group_allowlist.py",),
    ),
    Mutation(
        "doctor-telegram-checked-when-unused",
        f"{BOT}/channels/telegram/doctor.py",
        "        return []  # Telegram is not used",
        "        pass",
        "a bot on Signal only is warned about Telegram's token and empty allowlist (noise where nothing is wrong)",
        ("test_doctor.py",),
    ),
    # -- Telegram's sends: the rate budget's optional calls, edits within one message ---------------------------
    Mutation(
        "telegram-optional-edits-take-the-reply-budget",
        f"{BOT}/channels/telegram/ratelimit.py",
        '        optional = endpoint in _ALWAYS_OPTIONAL or bool((rate_limit_args or {}).get("optional"))',
        "        optional = endpoint in _ALWAYS_OPTIONAL",
        "progress edits and status messages marked optional wait for the budget like replies and delay them",
        ("test_telegram_ratelimit.py",),
    ),
    Mutation(
        "telegram-edit-not-cut-to-one-message",
        f"{BOT}/channels/telegram/send.py",
        "    text = fit_text(text, MAX_MESSAGE_UTF16)\n",
        "",
        "an edit longer than one message (a long stream) is refused by Telegram: the live message stops growing",
        ("test_telegram_format.py",),
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
        "        for attempt in range(1, START_ATTEMPTS):",
        "        for attempt in range(1, 1):",
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
    # -- Telegram's updates: our poll and the webhook (channels/telegram/bot.py, webhook.py) -----------------------
    Mutation(
        "telegram-offset-past-the-inbox",
        f"{BOT}/channels/telegram/bot.py",
        "                offset = await intake.confirmable(self._offset)",
        "                offset = self._offset",
        "the poll confirms updates the inbox has not made durable: a power loss while the disk fails loses them",
        ("test_reliability_disk.py",),
    ),
    Mutation(
        "telegram-poll-backoff-does-not-grow",
        f"{BOT}/channels/telegram/bot.py",
        "                pause = min(POLL_BACKOFF_MAX_SECONDS, max(POLL_BACKOFF_FIRST_SECONDS, pause * 1.5))",
        "                pause = POLL_BACKOFF_FIRST_SECONDS",
        "a Bot API that keeps failing is asked again every second for as long as it fails",
        ("test_telegram_lifecycle.py",),
    ),
    Mutation(
        "telegram-409-polls-on",
        f"{BOT}/channels/telegram/bot.py",
        "            except (Conflict, InvalidToken) as err:",
        "            except InvalidToken as err:",
        "a second bot polling the same token is retried for ever instead of ending this one with exit code 1",
        ("test_telegram_lifecycle.py",),
    ),
    Mutation(
        "telegram-stop-leaves-the-batch-unconfirmed",
        f"{BOT}/channels/telegram/bot.py",
        "await self.turns.bot.get_updates(offset, timeout=0, allowed_updates=ALLOWED_UPDATES)",
        "pass",
        "a stop before the next poll confirmed the last batch: its commands run a second time at the next start",
        ("test_telegram_lifecycle.py",),
    ),
    Mutation(
        "telegram-webhook-secret-unchecked",
        f"{BOT}/channels/telegram/webhook.py",
        '        if not hmac.compare_digest(given.encode("utf-8"), self.secret.encode("utf-8")):',
        "        if not given:",
        "a forged webhook POST with any secret runs as the user it names",
        ("test_telegram_webhook.py",),
    ),
    # -- Telegram's commands through the shared intake (channels/telegram/intake.py) ------------------------------
    Mutation(
        "telegram-command-for-other-bot-answered",
        f"{BOT}/channels/telegram/intake.py",
        "        if for_other_bot(message, bot.username):\n            return\n",
        "",
        "a group's /help@otherbot is answered by this bot too (and an owner-only one refused to a friend)",
        ("test_telegram_commands.py",),
    ),
    Mutation(
        "telegram-reset-without-buttons",
        f"{BOT}/channels/telegram/intake.py",
        "            ask_reset=functools.partial(self.ask_reset, message),\n",
        "",
        "/reset in Telegram asks to type /reset yes: the Clear history and Cancel buttons are gone",
        ("test_telegram_commands.py",),
    ),
)
