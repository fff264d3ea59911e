"""Telegram's part of ``assistant setup`` (ops/channels/setup.py): the token checked with getMe until it works, the
owner's id (given, typed, or read from the first private message sent to the bot with getUpdates), the Bot API
server. What the config holds already (a token, the allowlist, the server) is offered as the default and kept
when not asked about; the dialog's steps every channel with a token shares are ops/channels/setup.py's."""

from __future__ import annotations

import os
import re

from assistant_framework.config import TOKEN_ENV
from assistant_framework.config.env import env_value
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.ops.channels.setup import ChannelSetup, FirstSender, Flags, SetupError, Steps

# The Bot API calls (ops/channels/telegram/probe.py) are imported by the steps that make them: every `assistant`
# command reads this module for its flags.

#: A bot token as @BotFather gives it: the bot's id, a colon, then letters, digits, ``_`` and ``-``.
TOKEN_FORM = re.compile(r"\d{1,20}:[A-Za-z0-9_-]{1,100}")


def add_arguments(parser: Flags) -> None:
    parser.add_argument("--token", help="the bot token from @BotFather (checked with getMe)")
    parser.add_argument("--no-telegram", action="store_true", help="no Telegram: the terminal chat only")
    parser.add_argument(
        "--telegram-base-url",
        help="a self-hosted Bot API server, e.g. http://127.0.0.1:8081 (default: api.telegram.org)",
    )
    parser.add_argument(
        "--owner-id", type=int, help="your numeric Telegram user id (else: write to the bot and it is read)"
    )


def steps(setup: ChannelSetup) -> None:
    """The token, then the allowlist with the owner first; the found owner's flag is kept for a run that
    writes nothing."""
    telegram = TelegramSteps(setup)
    checked = telegram.telegram()
    if checked is not None:
        allowed = telegram.owner(*checked)
        setup.dialog.say(f"Telegram: only user(s) {', '.join(map(str, allowed))} may talk to the bot.")
        setup.settings.append(("telegram.allowed_user_ids", allowed))
    if checked is not None or telegram.current_token:
        setup.reached.append("Telegram")


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot be a bot token (checked before it is sent anywhere), or None."""
    if TOKEN_FORM.fullmatch(token):
        return None
    return (
        "that does not look like a bot token (@BotFather's tokens are the bot's number, a colon, then letters "
        "and digits, e.g. 123456789:AAH4x...); paste the whole token."
    )


class TelegramSteps(Steps):
    """The token and the allowlist's owner."""

    def __init__(self, setup: ChannelSetup) -> None:
        super().__init__(setup)
        telegram = setup.section("telegram")
        token = os.environ.get(TOKEN_ENV) or telegram.get("token") or ""
        self.current_token = env_value(token) if isinstance(token, str) else ""
        ids = telegram.get("allowed_user_ids")
        self.current_ids = [
            i for i in (ids if isinstance(ids, list) else []) if isinstance(i, int) and not isinstance(i, bool)
        ]
        base = telegram.get("base_url")
        self.current_base_url = base if isinstance(base, str) and base else None

    def telegram_base_url(self) -> str | None:
        """The Bot API server: ``--telegram-base-url`` as users write it (http://host:8081, with or
        without /bot), else the one configured; None for Telegram's own."""
        from assistant_framework.config.settings.bot_api import BotApiAddressError, bot_api_urls

        given = self.a.telegram_base_url
        if given is None:
            try:
                return bot_api_urls(self.current_base_url)[0] if self.current_base_url else None
            except BotApiAddressError:
                return self.current_base_url
        try:
            return bot_api_urls(given)[0]
        except BotApiAddressError as exc:
            raise SetupError(f"--telegram-base-url: {exc}") from None

    def telegram(self) -> tuple[str, JsonObject] | None:
        """The token checked with getMe; None to run without Telegram (terminal chat only) or to keep
        the token (and the allowlist) already configured."""
        from messaging_llm_bot.ops.channels.telegram.probe import Unanswered, with_bot

        if self.a.no_telegram:
            self.io.say("Telegram: skipped (the terminal chat works without it: `make chat`).")
            return None
        base_url = self.telegram_base_url()
        first = self._first_token()
        if first is None:
            return None
        token, kept = first
        if token is None and not self.io.interactive:
            self.io.say("Telegram: no --token given; skipped (the terminal chat works: `make chat`).")
            return None
        me: JsonObject = {}

        def ask() -> str:
            self.io.say("Telegram: create a bot with @BotFather (/newbot) and paste its token (empty: skip).")
            return self.io.secret("Bot token: ")

        def problem(token: str) -> str:
            wrong = token_problem(token)
            if wrong is not None:
                return wrong
            try:
                me.update(with_bot(token, base_url, lambda bot: bot.get_me()).to_dict())
            except Unanswered as exc:
                return str(exc)
            return ""

        token = self.secret_until_works("Telegram", token, ask, problem, kept=kept)
        if token is None:
            return None
        self._accepted(token, me, base_url, written=token not in (self.current_token, os.environ.get(TOKEN_ENV)))
        return token, me

    def _first_token(self) -> tuple[str | None, bool] | None:
        """(the token to try first: --token, the environment's, or the configured one kept or replaced; it is the
        configured one kept), or None to keep the configured token unasked."""
        if self.a.token is not None:
            return self.a.token, False
        if os.environ.get(TOKEN_ENV):
            return os.environ[TOKEN_ENV], False
        if not self.current_token:
            return None, False
        if not self.io.interactive:
            self.io.say("Telegram: no --token given; the configured token and allowlist are kept.")
            return None
        typed = self.kept_or_new("Telegram", "bot token")
        return (typed, False) if typed else (self.current_token, True)

    def _accepted(self, token: str, me: JsonObject, base_url: str | None, *, written: bool) -> None:
        """The token getMe accepted: said, and written to the config (``written``: not the environment's or
        the kept one), with the Bot API server's address when one was given."""
        from assistant_framework.config.settings.bot_api import bot_api_urls

        self.io.say(f"Telegram: the token works; your bot is @{me.get('username')} ({me.get('first_name', '')}).")
        if written:
            self.settings.append(("telegram.token", token))
        if base_url and self.a.telegram_base_url is not None:
            self.settings.append(("telegram.base_url", base_url))
            self.settings.append(("telegram.base_file_url", bot_api_urls(base_url)[1]))

    def owner(self, token: str, me: JsonObject) -> list[int]:
        """The allowlist: the owner's numeric id first (given, typed, or read from the first private
        message sent to the bot), then whoever the allowlist already held."""
        current = list(self.current_ids)
        if self.a.owner_id is not None:
            owner = self.a.owner_id
        elif current and not self.io.interactive:
            return current
        else:

            def not_an_id(text: str) -> str | None:
                if text in ("", "find") or text.lstrip("-").isdigit():
                    return None
                return f"{text!r} is not a number (your numeric user id, e.g. 123456789)"

            if current:
                question = "Your numeric Telegram user id ('find': write to the bot and it is read)"
            else:
                question = "Your numeric Telegram user id (empty: find it by writing to the bot)"
            typed = self.io.answer_until(question, str(current[0]) if current else "", not_an_id)
            owner = int(typed) if typed not in ("", "find") else self._read_owner(token, me)
        return [owner, *(i for i in current if i != owner)]

    def _read_owner(self, token: str, me: JsonObject) -> int:
        """The id of the first private message sent to the bot within ``--wait`` seconds (getUpdates)."""
        from messaging_llm_bot.ops.channels.telegram.probe import Unanswered, read_senders, with_bot

        base_url = self.telegram_base_url()

        def read(_seconds: float) -> list[FirstSender]:
            try:
                return with_bot(token, base_url, read_senders)
            except Unanswered as exc:
                raise SetupError(
                    f"Telegram: reading messages failed: {exc} "
                    "(another running bot, or a webhook, takes them: stop it or pass --owner-id)"
                ) from None

        return int(self.first_sender("Telegram", read, "--owner-id", f"@{me.get('username')}").id)
