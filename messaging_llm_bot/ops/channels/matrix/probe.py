"""What ``doctor`` asks of the homeserver, through the channel's own client: does it answer, does the login
work, and which joined rooms are end-to-end encrypted (the channel cannot read them).

The login uses a device of its own ("doctor"), logged out again at the end: a password login on the bot's
device would end the running bot's session (the homeserver replaces that device's access token).
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field

from assistant_framework.config.settings import MatrixSettings
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.matrix.client import LoginFailed, MatrixClient, MatrixUnavailable
from messaging_llm_bot.channels.matrix.settings import MatrixLogin

MAX_ROOMS_CHECKED = 50
DOCTOR_DEVICE = "doctor"


@dataclass
class MatrixProbe:
    """What the homeserver said: ``reached`` and ``logged_in`` with why not (``problem``)."""

    reached: bool = False
    logged_in: bool = False
    problem: str = ""
    versions: list[str] = field(default_factory=list)
    rooms: int = 0
    encrypted: list[str] = field(default_factory=list)


async def probe(config: MatrixSettings, timeout: float = 20.0) -> MatrixProbe:
    """Ask the homeserver (within ``timeout`` seconds)."""
    try:
        return await asyncio.wait_for(_probe(config), timeout)
    except TimeoutError:
        return MatrixProbe(problem=f"{config.homeserver_url} did not answer within {timeout:.0f} s")


async def _probe(config: MatrixSettings) -> MatrixProbe:
    result = MatrixProbe()
    doctor = dataclasses.replace(config, device_name="doctor (assistant)")
    token = MatrixLogin.of(config).access_token
    client = MatrixClient(doctor, None if token else DOCTOR_DEVICE)
    try:
        try:
            answer = await client.raw("GET", "/_matrix/client/versions", None, auth=False)
        except (MatrixUnavailable, DeliveryError) as err:
            result.problem = f"{config.homeserver_url} does not answer: {err}"
            return result
        result.reached = True
        versions = answer.get("versions")
        result.versions = [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else []
        try:
            await client.login()
        except (LoginFailed, MatrixUnavailable) as err:
            result.problem = str(err)
            return result
        result.logged_in = True
        rooms = (await client.raw("GET", "/_matrix/client/v3/joined_rooms", None)).get("joined_rooms")
        joined = [r for r in rooms if isinstance(r, str)] if isinstance(rooms, list) else []
        result.rooms = len(joined)
        for room in joined[:MAX_ROOMS_CHECKED]:
            if await client.joined_encrypted(room):
                result.encrypted.append(room)
        if not token:  # the doctor's own device goes again; a configured token is the owner's
            await client.raw("POST", "/_matrix/client/v3/logout", {})
    except (MatrixUnavailable, DeliveryError) as err:
        result.problem = str(err)
    finally:
        await client.close()
    return result
