"""What doctor and setup ask the Graph API: does the access token reach the phone number (one GET)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from messaging_llm_bot.channels.whatsapp.graph import error_of

TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Reached:
    """The number the token reaches (``display_phone_number``), or why not (``problem``, Meta's ``code``)."""

    number: str = ""
    problem: str = ""
    code: int = 0


def probe_number(base_url: str, phone_number_id: str, token: str) -> Reached:
    url = f"{base_url.rstrip('/')}/{phone_number_id}"
    try:
        response = httpx.get(
            url,
            params={"fields": "display_phone_number,verified_name"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=TIMEOUT_SECONDS,
        )
    except httpx.HTTPError as err:
        return Reached(problem=f"the Graph API cannot be reached: {type(err).__name__}")
    if response.status_code >= 400:
        code, message = error_of(response)
        return Reached(problem=f"the Graph API refused it: #{code} {message}", code=code)
    try:
        return Reached(number=str(response.json().get("display_phone_number") or "?"))
    except ValueError:
        return Reached(problem="the Graph API's answer is not JSON")
