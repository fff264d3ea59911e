"""What doctor and setup ask the Graph API: does the access token reach the phone number (one GET); and what
the doctor asks the running bot's webhook on this machine: does it answer Meta's handshake with the verify
token (so it is the bot's, with the same token)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import httpx

from assistant_framework.tls import shared_context
from messaging_llm_bot.channels.whatsapp.graph import error_of

TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class WhatsAppReached:
    """The number the token reaches (``display_phone_number``), or why not (``problem``, Meta's ``code``)."""

    number: str = ""
    problem: str = ""
    code: int = 0


def probe_number(base_url: str, phone_number_id: str, token: str) -> WhatsAppReached:
    url = f"{base_url.rstrip('/')}/{phone_number_id}"
    try:
        response = httpx.get(
            url,
            params={"fields": "display_phone_number,verified_name"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=TIMEOUT_SECONDS,
            verify=shared_context(),
        )
    except httpx.HTTPError as err:
        return WhatsAppReached(problem=f"the Graph API cannot be reached: {type(err).__name__}")
    if response.status_code >= 400:
        code, message = error_of(response)
        return WhatsAppReached(problem=f"the Graph API refused it: #{code} {message}", code=code)
    try:
        return WhatsAppReached(number=str(response.json().get("display_phone_number") or "?"))
    except ValueError:
        return WhatsAppReached(problem="the Graph API's answer is not JSON")


def verify_webhook(url: str, verify_token: str) -> tuple[int, bool]:
    """GET Meta's subscribe handshake at ``url``: its HTTP status and whether the challenge came back; raises
    httpx.HTTPError when nothing answers."""
    challenge = secrets.token_hex(8)
    params = {"hub.mode": "subscribe", "hub.verify_token": verify_token, "hub.challenge": challenge}
    response = httpx.get(url, params=params, timeout=TIMEOUT_SECONDS, verify=shared_context())
    return response.status_code, response.status_code == 200 and response.text == challenge
