"""The request URL Slack's Events API posts to.

Served by Tornado on the channel's own event loop (``slack.webhook.listen``/``port``/``path``; put your HTTPS
reverse proxy in front: Slack calls only https). In this order, before anything runs:

- the body's size from its ``Content-Length`` (413 unread; chunked 411: the hooks listener's screen);
- ``X-Slack-Request-Timestamp`` within five minutes of now, else 401 (a recorded request replayed later);
- ``X-Slack-Signature``: ``v0=`` and the HMAC-SHA256 of ``v0:<timestamp>:<raw body>`` with the signing secret,
  compared in constant time (slack-sdk's ``SignatureVerifier``): wrong or missing is 401 and nothing is parsed
  or stored (past ``BAD_PER_MINUTE`` refused ones a minute: 429);
- a command or button press taken before (the same signature, remembered while its timestamp is fresh): 200
  and nothing runs (a recorded request sent again within the five minutes; an event is taken once by the
  inbox, by its ``event_id``);
- ``per_minute`` (429: Slack sends it again), then the body: an interactive payload (a button pressed, form data
  ``payload=<json>``, the app's Interactivity request URL set to the same address) is handed to the channel's
  ``act``; a slash command (form data with ``command``, each command's Request URL the same address: slash.py)
  is answered 200 at once, then handed to the channel's ``command``, which answers in the chat; else the JSON:
  ``url_verification`` answers its ``challenge``; an ``event_callback`` is handed to the channel (``Take``),
  which stores its message in the durable inbox by its ``event_id``; only then the answer is 200. A retry
  (``X-Slack-Retry-Num``) of an event taken is passed over by the inbox: answered once.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from assistant_framework.config.settings import SlackSettings
from assistant_framework.serve.clients import PerMinute
from messaging_llm_bot.channels.listener import PlainHandler, WebhookListener

log = logging.getLogger(__name__)

BAD_PER_MINUTE = 20
MAX_AGE_SECONDS = 5 * 60
MAX_CHALLENGE_CHARS = 200

#: The channel's part: store a signed event's message; False when it could not be stored (503).
Take = Callable[[Any], Awaitable[bool]]
#: The channel's part for a signed slash command (slash.py): its fields, answered in its chat.
Command = Callable[[Mapping[str, object]], Awaitable[None]]


class Taken:
    """The signatures of the requests taken while their timestamps are fresh: a signed request sent again in that
    time (a recorded slash command or button press replayed) is known. At most ``MAX_TAKEN`` (the oldest go)."""

    MAX_TAKEN = 10_000

    def __init__(self) -> None:
        self._until: OrderedDict[str, float] = OrderedDict()  # signature -> when its timestamp goes stale

    def seen(self, signature: str, now: float) -> bool:
        while self._until and next(iter(self._until.values())) < now:
            self._until.popitem(last=False)
        return signature in self._until

    def take(self, signature: str, timestamp: str) -> None:
        self._until[signature] = int(timestamp) + MAX_AGE_SECONDS
        while len(self._until) > self.MAX_TAKEN:
            self._until.popitem(last=False)


def fresh(timestamp: str | None, now: float) -> bool:
    """``X-Slack-Request-Timestamp`` is a number of seconds within five minutes of ``now``."""
    if not timestamp or not timestamp.isdigit() or len(timestamp) > 12:
        return False
    return abs(now - int(timestamp)) <= MAX_AGE_SECONDS


def signed(secret: str, body: bytes, timestamp: str, signature: str | None) -> bool:
    """``signature`` is Slack's v0 signature of ``body`` at ``timestamp`` with ``secret`` (constant time)."""
    from slack_sdk.signature import SignatureVerifier  # the slack extra

    if not secret or not signature:
        return False
    try:
        return SignatureVerifier(secret).is_valid(body, timestamp, signature)
    except (ValueError, UnicodeDecodeError):  # a body that is not UTF-8 cannot be what Slack signed
        return False


class SlackEventsHandler(PlainHandler):
    def initialize(self, webhook: SlackWebhook) -> None:
        self.webhook = webhook

    def _refuse(self, why: str) -> None:
        if not self.webhook.bad.allow("bad"):
            self.set_header("Retry-After", "60")
            self._answer(429, "too many refused requests lately")
            return
        log.warning("slack: a request %s from %s (refused)", why, self.request.remote_ip)
        self._answer(401, f"refused: {why}")

    async def post(self) -> None:
        webhook = self.webhook
        body = self.request.body or b""
        stamp = self.request.headers.get("X-Slack-Request-Timestamp")
        if not fresh(stamp, time.time()):
            self._refuse("with a missing timestamp or one more than five minutes off")
            return
        assert stamp is not None
        signature = self.request.headers.get("X-Slack-Signature")
        if not signed(webhook.signing_secret(), body, stamp, signature):
            self._refuse("without a valid signature")
            return
        assert signature is not None
        if webhook.taken.seen(signature, time.time()):
            log.info("slack: a request taken before came again from %s (nothing runs)", self.request.remote_ip)
            self._answer(200, "")
            return
        if not webhook.per_minute.allow("slack"):
            self.set_header("Retry-After", "60")
            self._answer(429, "too many events this minute (slack.webhook.per_minute)")
            return
        form = self.request.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded")
        try:
            fields = {k: v[0] for k, v in parse_qs(body.decode(), keep_blank_values=True).items()} if form else {}
            payload = json.loads(fields["payload"] if form else body) if "payload" in fields or not form else None
        except (ValueError, UnicodeDecodeError):
            self._answer(400, "the body is not JSON, nor a form with a JSON payload or a command")
            return
        if form:
            webhook.taken.take(signature, stamp)
            await self._form(fields, payload)
            return
        if isinstance(payload, dict) and payload.get("type") == "url_verification":
            challenge = str(payload.get("challenge") or "")
            if not challenge or len(challenge) > MAX_CHALLENGE_CHARS or not challenge.isprintable():
                self._answer(400, "challenge is missing or not a short printable value")
                return
            log.info("slack: the request URL's verification passed")
            self._answer(200, challenge)
            return
        if not await webhook.take(payload):
            self._answer(503, "the event could not be stored; send it again")
            return
        self._answer(200, "")

    async def _form(self, fields: dict[str, str], payload: Any) -> None:
        """A slash command (acknowledged first, within Slack's three seconds: its answer is a message in the chat),
        an interactive payload, or Slack's ``ssl_check`` of a command's URL."""
        if "command" in fields:
            self._answer(200, "")
            await self.webhook.command(fields)
        elif "payload" in fields:
            await self.webhook.act(payload)
            self._answer(200, "")
        elif fields.get("ssl_check") == "1":
            self._answer(200, "")  # Slack trying the command URL's certificate: nothing to run
        else:
            self._answer(400, "the body is not JSON, nor a form with a JSON payload or a command")


class SlackWebhook(WebhookListener):
    """The listener (channels/listener.py) with the channel's config and its parts (``Take``: an event, ``act``:
    an interactive payload)."""

    def __init__(
        self,
        config: Callable[[], SlackSettings],
        signing_secret: Callable[[], str],
        take: Take,
        act: Take,
        command: Command,
    ) -> None:
        self.config = config
        self.signing_secret = signing_secret
        self.take = take
        self.act = act  # an interactive payload: a button pressed
        self.command = command  # a slash command's fields
        first = config().webhook
        super().__init__(
            first.listen, first.port, first.path, SlackEventsHandler, {"webhook": self}, first.max_body_bytes
        )
        self.per_minute = PerMinute(first.per_minute)
        self.bad = PerMinute(BAD_PER_MINUTE)
        self.taken = Taken()
