"""Webhook mode: Telegram's POSTs on the shared listener (channels/listener.py), never without a secret: without
one, anyone who finds the URL could post updates as the owner, so one is generated into ``state/webhook_secret``.
A POST without it is answered 403 and runs nothing; a valid update 200 only once the inbox holds it on disk
(bot.py's ``webhook_update``), else 503 and Telegram sends it again (docs/telegram.md).
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
from collections.abc import Awaitable, Callable

import telegram
from telegram import Update

from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.listener import PlainHandler

log = logging.getLogger(__name__)

SECRET_FILE = "state/webhook_secret"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: Telegram accepts 1-256 characters of A-Z, a-z, 0-9, "_" and "-"; token_urlsafe uses exactly those.
_GENERATED_BYTES = 48
#: An update is a message of at most 4,096 characters and what it quotes: far below this.
MAX_UPDATE_BYTES = 1_000_000


def webhook_secret(configured: str | None, workspace: Workspace) -> str:
    """The configured secret, else the one stored in ``state/``, else a new one (stored, logged once)."""
    if configured:
        return configured
    stored = workspace.read_text(SECRET_FILE, default="").strip()
    if stored:
        return stored
    secret = secrets.token_urlsafe(_GENERATED_BYTES)
    workspace.write_text(SECRET_FILE, secret + "\n")  # a new file is created 0600 (mkstemp)
    log.info(
        "telegram: no telegram.webhook.secret_token configured; generated one and stored it in %s "
        "(webhook requests without it are refused with 403)",
        SECRET_FILE,
    )
    return secret


class UpdateHandler(PlainHandler):
    def initialize(self, secret: str, bot: telegram.Bot, take: Callable[[Update], Awaitable[bool]]) -> None:
        self.secret, self.bot, self.take = secret, bot, take

    async def post(self) -> None:
        given = self.request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode("utf-8"), self.secret.encode("utf-8")):
            log.info("telegram: a webhook POST without the right secret from %s (refused)", self.request.remote_ip)
            self._answer(403, f"{SECRET_HEADER} is missing or wrong")
            return
        try:
            data = json.loads(self.request.body)
            update = Update.de_json(data, self.bot) if isinstance(data, dict) else None
        except Exception:  # noqa: BLE001 - JSON that is no update: PTB's types raise more than one kind
            update = None
        if update is None:
            log.warning("telegram: a webhook POST that is no update was refused")
            self._answer(400, "the body is not a Telegram update")
            return
        if not await self.take(update):
            self._answer(503, "the update could not be stored; send it again")
            return
        self._answer(200, "ok")
