"""What doctor and setup ask Slack: does the bot token work (``auth.test``), does the app-level token open a Socket
Mode connection (``apps.connections.open``: a URL, not used), and does the running bot's request URL answer a
signed ``url_verification`` (so it holds the same signing secret)."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass

import httpx

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
    response = httpx.post(url, content=body.encode(), headers=headers, timeout=TIMEOUT_SECONDS)
    return response.status_code, response.status_code == 200 and response.text == challenge
