"""Socket Mode: the events over a websocket the bot opens itself (``slack.socket_mode``), so Slack needs no
request URL and the bot no public address.

slack-sdk's aiohttp ``SocketModeClient`` on the channel's event loop: ``apps.connections.open`` with the app-level
token (``xapp-...``) gives a one-time websocket URL; Slack sends each event in an envelope, which the bot
acknowledges with its ``envelope_id``. An ``events_api`` envelope goes through the same intake as the Events API
(``Take``: its message stored in the durable inbox by ``event_id``) and is acknowledged only once stored: one not
acknowledged is sent again by Slack, and a redelivery's ``event_id`` is passed over by the inbox (answered once).
An ``interactive`` envelope (a button pressed) goes to the channel's ``act``; a ``slash_commands`` one (slash.py) is
acknowledged at once (Slack waits three seconds), then goes to the channel's ``command``; others are acknowledged
and passed over. A ``disconnect`` envelope (Slack refreshes connections every
few hours) makes the client open a new connection first; so does a dropped one.

The first URL is asked for here, before the client runs, so a refused app token stops the start with one line
(exit 1) instead of the client retrying forever; the client's own logs lose their tracebacks (one line each).
"""

from __future__ import annotations

import logging
from typing import Any

from assistant_framework.config.settings import SlackSettings
from assistant_framework.serve.clients import PerMinute
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.slack.api import TIMEOUT_SECONDS, SlackUnavailable, failure
from messaging_llm_bot.channels.slack.settings import api_url
from messaging_llm_bot.channels.slack.webhook import Command, Take

log = logging.getLogger(__name__)

#: Seconds between the client's pings; a connection silent for four of them is replaced.
PING_SECONDS = 10.0


class _NoTraceback(logging.Filter):
    """slack-sdk logs a failed reconnect with ``logger.exception``: the line stays, its traceback goes."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True


_sdk_log = logging.getLogger(f"{__name__}.sdk")
_sdk_log.addFilter(_NoTraceback())


async def open_url(base_url: str, app_token: str) -> str:
    """A websocket URL from ``apps.connections.open``; raises ``DeliveryError`` for a token Slack refuses (any
    error but a rate limit or Slack's own trouble), ``SlackUnavailable`` when it cannot answer now."""
    from slack_sdk.errors import SlackApiError, SlackClientError
    from slack_sdk.web.async_client import AsyncWebClient

    web = AsyncWebClient(base_url=base_url, timeout=TIMEOUT_SECONDS)
    try:
        answer = await web.apps_connections_open(app_token=app_token)
    except SlackApiError as err:
        status, code = err.response.status_code, err.response.get("error")
        if status == 429 or status >= 500:
            raise failure("apps.connections.open", status, code, err.response.headers) from None
        raise DeliveryError(f"apps.connections.open: {code or status}", for_good=True) from None
    except (OSError, SlackClientError) as err:
        raise SlackUnavailable(f"the Slack Web API cannot be reached: {type(err).__name__}") from None
    url = answer.get("url")
    if not isinstance(url, str) or not url.startswith(("wss://", "ws://")):
        raise SlackUnavailable("apps.connections.open: the answer has no websocket URL")
    return url


class AppTokenRefused(Exception):
    """Slack refused the app-level token: the channel cannot take events."""


class SocketMode:
    """The running Socket Mode connection; ``start`` and ``stop`` on the channel's event loop."""

    def __init__(self, config: SlackSettings, app_token: str, take: Take, act: Take, command: Command) -> None:
        self.config = config
        self.app_token = app_token
        self.take = take
        self.act = act
        self.command = command
        self.per_minute = PerMinute(config.webhook.per_minute)
        self.client: Any = None

    async def start(self) -> None:
        """Connect; raises ``AppTokenRefused`` when Slack refuses the app-level token."""
        from slack_sdk.socket_mode.aiohttp import SocketModeClient
        from slack_sdk.web.async_client import AsyncWebClient

        base_url = api_url(self.config)
        try:
            first: str | None = await open_url(base_url, self.app_token)
        except DeliveryError as err:
            raise AppTokenRefused(str(err)) from None
        except SlackUnavailable as err:
            log.warning("slack: Socket Mode cannot connect yet (%s); trying again", err)
            first = None  # the client asks for a URL itself, again until it connects
        web = AsyncWebClient(base_url=base_url, timeout=TIMEOUT_SECONDS)
        self.client = SocketModeClient(self.app_token, logger=_sdk_log, web_client=web, ping_interval=PING_SECONDS)
        self.client.socket_mode_request_listeners.append(self._on_request)
        self.client.wss_uri = first  # connect() takes the URL asked for above
        await self.client.connect()

    async def _on_request(self, client: Any, request: Any) -> None:
        from slack_sdk.socket_mode.response import SocketModeResponse

        if request.type == "events_api":
            if not self.per_minute.allow("slack"):
                log.warning("slack: too many events this minute (slack.webhook.per_minute); Slack sends it again")
                return
            if not await self.take(request.payload):
                return  # not stored: unacknowledged, Slack sends it again
        elif request.type == "interactive":
            await self.act(request.payload)
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
        if request.type == "slash_commands":
            await self.command(request.payload)  # acknowledged first: its answer is a message in the chat

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.close()
