"""Setup's Telegram steps: the token checked with getMe, the owner's id (given, typed, or read from
the first private message sent to the bot), the Bot API server."""

from __future__ import annotations

import os
import time
from typing import Any

from assistant_framework.config import TOKEN_ENV
from messaging_llm_bot.channels.telegram.probe import call, get_me, senders
from messaging_llm_bot.channels.telegram.settings import BotApiAddressError, bot_api_urls
from messaging_llm_bot.ops.setup.answers import Answers, Current, not_a_choice, token_problem
from messaging_llm_bot.ops.setup.dialog import Console, SetupError, Step


class TelegramSteps(Step):
    """The token and the allowlist's owner."""

    def __init__(
        self, answers: Answers, console: Console, current: Current, settings: list[tuple[str, object]]
    ) -> None:
        super().__init__(answers, console, current, settings)
        #: The owner's id when it was read from a message (said again if nothing is written).
        self.found_owner: int | None = None

    def telegram_base_url(self) -> str | None:
        """The Bot API server: ``--telegram-base-url`` as users write it (http://host:8081, with or
        without /bot), else the one configured; None for Telegram's own."""
        given = self.a.telegram_base_url
        if given is None:
            try:
                return bot_api_urls(self.current.telegram_base_url)[0] if self.current.telegram_base_url else None
            except BotApiAddressError:
                return self.current.telegram_base_url
        try:
            return bot_api_urls(given)[0]
        except BotApiAddressError as exc:
            raise SetupError(f"--telegram-base-url: {exc}") from None

    def telegram(self) -> tuple[str, dict[str, Any]] | None:
        """The token checked with getMe; None to run without Telegram (terminal chat only) or to keep
        the token (and the allowlist) already configured."""
        if self.a.no_telegram:
            self.io.say("Telegram: skipped (the terminal chat works without it: `make chat`).")
            return None
        base_url = self.telegram_base_url()
        token = self.a.token
        from_env = kept = False
        if token is None and os.environ.get(TOKEN_ENV):
            token, from_env = os.environ[TOKEN_ENV], True
        if token is None and self.current.token:
            if not self.a.interactive:
                self.io.say("Telegram: no --token given; the configured token and allowlist are kept.")
                return None
            self.io.say("Telegram: a bot token is configured; press Enter to keep it, or paste a new one.")
            typed = self.io.secret("Bot token (empty: keep the current one): ").strip()
            token, kept = (typed, False) if typed else (self.current.token, True)
        while True:
            if token is None:
                if not self.a.interactive:
                    self.io.say("Telegram: no --token given; skipped (the terminal chat works: `make chat`).")
                    return None
                self.io.say("Telegram: create a bot with @BotFather (/newbot) and paste its token (empty: skip).")
                token = self.io.secret("Bot token: ").strip()
                if not token:
                    return None
            problem = token_problem(token)
            if problem is not None:
                if not self.a.interactive:
                    raise SetupError(f"Telegram: {problem}")
                self.io.say(f"Telegram: {problem}.")
                token = None
                continue
            answer = get_me(token, base_url=base_url)
            if answer.ok:
                me = answer.result or {}
                self.io.say(
                    f"Telegram: the token works; your bot is @{me.get('username')} ({me.get('first_name', '')})."
                )
                if not from_env and not kept:
                    self.settings.append(("telegram.token", token))
                if base_url and self.a.telegram_base_url is not None:
                    self.settings.append(("telegram.base_url", base_url))
                    self.settings.append(("telegram.base_file_url", bot_api_urls(base_url)[1]))
                return token, me
            if kept:
                self.io.say(f"Telegram: the configured token: {answer.error}; kept as it is, with its allowlist.")
                return None
            if not self.a.interactive:
                raise SetupError(f"Telegram: {answer.error}")
            self.io.say(f"Telegram: {answer.error}")
            token = None

    def owner(self, token: str, me: dict[str, Any]) -> list[int]:
        """The allowlist: the owner's numeric id first (given, typed, or read from the first private
        message sent to the bot), then whoever the allowlist already held."""
        current = list(self.current.allowed_user_ids)
        if self.a.owner_id is not None:
            owner = self.a.owner_id
        elif current and not self.a.interactive:
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
            typed = self._ask_until(question, str(current[0]) if current else "", not_an_id)
            owner = int(typed) if typed not in ("", "find") else self._read_owner(token, me)
        return [owner, *(i for i in current if i != owner)]

    def _read_owner(self, token: str, me: dict[str, Any]) -> int:
        """The id of the first private message sent to the bot within ``--wait`` seconds."""
        base_url = self.telegram_base_url()
        self.io.say(
            f"Now send any message to @{me.get('username')} from your own Telegram account "
            f"(waiting up to {self.a.wait_seconds:g} s)..."
        )
        deadline = time.monotonic() + self.a.wait_seconds
        while True:
            answer = call(
                token, "getUpdates", {"timeout": 2, "allowed_updates": ["message"]}, base_url=base_url, timeout=15
            )
            if not answer.ok:
                raise SetupError(
                    f"Telegram: reading messages failed: {answer.error} "
                    "(another running bot, or a webhook, takes them: stop it or pass --owner-id)"
                )
            found = senders(answer.result or [])
            if found:
                chosen = self._pick_sender(found)
                # Confirm what was read, so the bot does not answer the setup message on its first start.
                last = max(u["update_id"] for u in answer.result)
                call(token, "getUpdates", {"offset": last + 1, "timeout": 0}, base_url=base_url)
                self.found_owner = chosen
                return chosen
            if time.monotonic() >= deadline:
                raise SetupError("Telegram: no message arrived; run setup again, or pass --owner-id ID")

    def _pick_sender(self, found: list[dict[str, Any]]) -> int:
        if len(found) == 1 or not self.a.interactive:
            if len(found) > 1:
                names = ", ".join(f"{s['name']} ({s['id']})" for s in found)
                raise SetupError(f"Telegram: several people wrote to the bot ({names}); pass --owner-id ID")
            sender = found[0]
            self.io.say(f"Telegram: got a message from {sender['name']} (id {sender['id']}): {sender['text'][:40]!r}")
            return sender["id"]
        for index, sender in enumerate(found, 1):
            self.io.say(f"  {index}. {sender['name']} (id {sender['id']}): {sender['text'][:40]!r}")
        choice = self._ask_until("Which one is you", "1", lambda c: not_a_choice(c, len(found)))
        return found[int(choice) - 1]["id"]
