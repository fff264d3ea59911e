"""What doctor and setup ask Slack: does the bot token work (``auth.test``), does the app-level token open a Socket
Mode connection (``apps.connections.open``: a URL, not used), does the running bot's request URL answer a
signed ``url_verification`` (so it holds the same signing secret), and who wrote to the bot in a DM
(``conversations.list`` and ``conversations.history``: the owner's id for setup)."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass

import httpx

from assistant_framework.tls import shared_context
from messaging_llm_bot.ops.channels.setup import FirstSender, SetupError

TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class SlackReached:
    """The bot user and team the token reaches, or why not (``problem``, Slack's ``error`` code)."""

    bot: str = ""
    team: str = ""
    problem: str = ""
    code: str = ""


def probe_token(base_url: str, token: str) -> SlackReached:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError, SlackClientError

    client = WebClient(token=token, base_url=base_url, timeout=TIMEOUT_SECONDS, retry_handlers=[])
    try:
        answer = client.auth_test()
    except SlackApiError as err:
        code = str(err.response.get("error") or err.response.status_code)
        return SlackReached(problem=f"Slack refused the token: {code}", code=code)
    except (OSError, SlackClientError) as err:
        return SlackReached(problem=f"the Slack Web API cannot be reached: {type(err).__name__}")
    return SlackReached(bot=str(answer.get("user") or "?"), team=str(answer.get("team") or "?"))


def probe_app_token(base_url: str, app_token: str) -> str:
    """Why ``apps.connections.open`` refused the app-level token, or "" when it gave a websocket URL."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError, SlackClientError

    client = WebClient(base_url=base_url, timeout=TIMEOUT_SECONDS, retry_handlers=[])
    try:
        answer = client.apps_connections_open(app_token=app_token)
    except SlackApiError as err:
        return f"Slack refused the app-level token: {err.response.get('error') or err.response.status_code}"
    except (OSError, SlackClientError) as err:
        return f"the Slack Web API cannot be reached: {type(err).__name__}"
    return "" if str(answer.get("url") or "").startswith(("wss://", "ws://")) else "Slack gave no websocket URL"


def verify_url(url: str, signing_secret: str) -> tuple[int, bool]:
    """POST a signed ``url_verification`` to ``url``: its HTTP status and whether the challenge came back;
    raises httpx.HTTPError when nothing answers."""
    from slack_sdk.signature import SignatureVerifier

    challenge = secrets.token_hex(12)
    body = json.dumps({"type": "url_verification", "challenge": challenge, "token": "doctor"})
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": SignatureVerifier(signing_secret).generate_signature(timestamp=stamp, body=body) or "",
    }
    response = httpx.post(url, content=body.encode(), headers=headers, timeout=TIMEOUT_SECONDS, verify=shared_context())
    return response.status_code, response.status_code == 200 and response.text == challenge


def dm_senders(base_url: str, token: str, since: float) -> list[FirstSender]:
    """Who wrote to the bot in a DM after ``since`` (a Unix time), oldest first, each once (the scopes im:read and
    im:history); a refusal or no answer is a SetupError naming Slack's error."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError, SlackClientError

    client = WebClient(token=token, base_url=base_url, timeout=TIMEOUT_SECONDS, retry_handlers=[])
    found: dict[str, FirstSender] = {}
    try:
        bot = client.auth_test().get("user_id")
        for dm in client.conversations_list(types="im").get("channels") or []:
            history = client.conversations_history(channel=dm["id"], oldest=f"{since:.6f}").get("messages") or []
            for message in reversed(history):
                user = str(message.get("user") or "")
                if user and user != bot and not message.get("bot_id") and not message.get("subtype"):
                    found.setdefault(user, FirstSender(user, user, str(message.get("text") or "")))
    except SlackApiError as err:
        raise SetupError(f"Slack: reading the bot's DMs failed: {err.response.get('error')}") from None
    except (OSError, SlackClientError) as err:
        raise SetupError(f"Slack: the Web API cannot be reached: {type(err).__name__}") from None
    return list(found.values())
