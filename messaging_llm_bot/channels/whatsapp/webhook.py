"""The webhook Meta calls: ``GET`` for the verification handshake, ``POST`` for every event.

Served by Tornado on the channel's own event loop (``whatsapp.webhook.listen``/``port``/``path``; put your
HTTPS reverse proxy in front: Meta calls only https). In this order, before anything runs:

- ``GET``: ``hub.mode=subscribe`` and ``hub.verify_token`` equal to ``whatsapp.verify_token`` (compared in
  constant time) answer ``hub.challenge`` as the body; anything else 403.
- ``POST``: the body's size from its ``Content-Length`` (413 unread; chunked 411: the hooks listener's
  screen), then ``X-Hub-Signature-256`` against the HMAC-SHA256 of the raw body with the app secret, in
  constant time: wrong or missing is 403 and nothing is parsed or stored (past ``BAD_PER_MINUTE`` wrong ones
  a minute: 429), then ``per_minute`` (429: Meta sends it again later), then the JSON. The events are handed
  to the channel (``Take``), which stores the messages in the durable inbox; only then is the answer 200, so
  an event Meta does not hear back about is sent again, and the inbox takes its message id once.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from assistant_framework.config.settings import WhatsAppSettings
from assistant_framework.hooks.auth import SIGNATURE_HEADER, signature_of
from assistant_framework.serve.clients import PerMinute
from messaging_llm_bot.channels.listener import PlainHandler, WebhookListener

log = logging.getLogger(__name__)

BAD_PER_MINUTE = 20
MAX_CHALLENGE_CHARS = 200

#: The channel's part: store a signed payload's messages; False when they could not be stored (503).
Take = Callable[[Any], Awaitable[bool]]


def signed(app_secret: str, body: bytes, header: str | None) -> bool:
    """``header`` is ``sha256=<hex>`` of ``body`` with ``app_secret`` (constant time)."""
    if not header or not app_secret:
        return False
    expected = signature_of(app_secret, body).encode("utf-8")
    return hmac.compare_digest(header.strip().encode("utf-8"), expected)


def verified(config: WhatsAppSettings, mode: str | None, token: str | None) -> bool:
    """The handshake's mode and verify token are right (constant time)."""
    if mode != "subscribe" or not token or not config.verify_token:
        return False
    return hmac.compare_digest(token.encode("utf-8"), config.verify_token.encode("utf-8"))


class WebhookHandler(PlainHandler):
    def initialize(self, webhook: WhatsAppWebhook) -> None:
        self.webhook = webhook

    def get(self) -> None:
        config = self.webhook.config()
        challenge = self.get_query_argument("hub.challenge", "")
        if not verified(
            config, self.get_query_argument("hub.mode", None), self.get_query_argument("hub.verify_token", None)
        ):
            log.warning(
                "whatsapp: a webhook handshake with a wrong verify token from %s (refused)", self.request.remote_ip
            )
            self._answer(403, "wrong verify token")
            return
        if not challenge or len(challenge) > MAX_CHALLENGE_CHARS or not challenge.isprintable():
            self._answer(400, "hub.challenge is missing or not a short printable value")
            return
        log.info("whatsapp: the webhook's handshake passed")
        self._answer(200, challenge)

    async def post(self) -> None:
        webhook = self.webhook
        body = self.request.body or b""
        if not signed(webhook.app_secret(), body, self.request.headers.get(SIGNATURE_HEADER)):
            if not webhook.bad.allow("bad"):
                self.set_header("Retry-After", "60")
                self._answer(429, "too many wrong signatures lately")
                return
            log.warning("whatsapp: a webhook POST without a valid signature from %s (refused)", self.request.remote_ip)
            self._answer(403, f"{SIGNATURE_HEADER} does not match the body")
            return
        if not webhook.per_minute.allow("meta"):
            self.set_header("Retry-After", "60")
            self._answer(429, "too many events this minute (whatsapp.webhook.per_minute)")
            return
        try:
            payload = json.loads(body)
        except ValueError:
            self._answer(400, "the body is not JSON")
            return
        if not await webhook.take(payload):
            self._answer(503, "the events could not be stored; send them again")
            return
        self._answer(200, "ok")


class WhatsAppWebhook(WebhookListener):
    """The listener (channels/listener.py) with the channel's config and its part (``Take``)."""

    def __init__(self, config: Callable[[], WhatsAppSettings], app_secret: Callable[[], str], take: Take) -> None:
        self.config = config
        self.app_secret = app_secret
        self.take = take
        first = config().webhook
        super().__init__(first.listen, first.port, first.path, WebhookHandler, {"webhook": self}, first.max_body_bytes)
        self.per_minute = PerMinute(first.per_minute)
        self.bad = PerMinute(BAD_PER_MINUTE)
