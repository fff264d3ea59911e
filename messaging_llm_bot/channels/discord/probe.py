"""What doctor and setup ask Discord's REST API with the bot token: is it valid (``GET /users/@me``: the bot's
name), and may the application read messages (``GET /oauth2/applications/@me``: its message content intent)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

TIMEOUT_SECONDS = 10
#: The application's flags that say the message content intent is on (GATEWAY_MESSAGE_CONTENT and its
#: _LIMITED form for bots in fewer than 100 servers).
MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19)


@dataclass(frozen=True)
class DiscordReached:
    """The bot the token is, whether its application has the message content intent, or why not (``problem``)."""

    bot: str = ""
    message_content: bool = False
    problem: str = ""


def probe_token(base_url: str, token: str) -> DiscordReached:
    headers = {"Authorization": f"Bot {token}", "User-Agent": "DiscordBot (assistant-framework, 1)"}
    try:
        with httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=TIMEOUT_SECONDS) as client:
            me = client.get("/users/@me")
            if me.status_code == 401:
                return DiscordReached(problem="Discord refused the token (401 Unauthorized)")
            if me.status_code != 200:
                return DiscordReached(problem=f"Discord answered {me.status_code} to the token's check")
            app = client.get("/oauth2/applications/@me")
    except httpx.HTTPError as err:
        return DiscordReached(problem=f"Discord cannot be reached: {type(err).__name__}")
    name = str(me.json().get("username") or "?")
    flags = app.json().get("flags", 0) if app.status_code == 200 else 0
    return DiscordReached(bot=name, message_content=bool(int(flags or 0) & MESSAGE_CONTENT_FLAGS))
