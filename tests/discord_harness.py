"""Discord in this process for the channel contract kit: the channel's service in a thread, connected to the fake
Discord (tests/fakes/discord_api.py: the REST API and the gateway), which delivers the owner's messages over the
gateway. The real bot process: tests/test_discord_bot.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.running_channel import RunningChannel, starting

if (
    TYPE_CHECKING
):  # Imported where used: the fake Discord's aiohttp costs each xdist worker 0.1 s when collecting otherwise.
    from tests.fakes.discord_api import FakeDiscordAPI

OWNER = "80351110224678912"
STRANGER = "80351110224678913"


class RunningDiscord(RunningChannel):
    """A DiscordService running in a thread; ``start`` returns once the gateway's READY came."""

    def __init__(self, runtime: Any, discord: FakeDiscordAPI) -> None:
        from messaging_llm_bot.channels.discord.service import DiscordService

        super().__init__(runtime, DiscordService(runtime), "Discord")
        self.discord = discord


def discord_config(base: dict, discord: FakeDiscordAPI, **overrides: Any) -> dict:
    return {
        **base,
        "memory": {"enabled": False},
        "discord": {
            "enabled": True,
            "bot_token": discord.token,
            "allowed": [OWNER],
            "base_url": discord.base_url,
            **overrides,
        },
    }


def owner_texts(discord: FakeDiscordAPI) -> list[str]:
    """The bot's messages in the owner's DM as they show now."""
    return [m["content"] for m in discord.posted(discord.add_user(OWNER))]


def owner_writes(discord: FakeDiscordAPI, text: str) -> dict:
    return discord.dm(OWNER, text)


def question_of(discord: FakeDiscordAPI) -> tuple[dict, dict[str, str]]:
    """The bot's last message with buttons in the owner's DM, and its buttons' labels -> custom ids."""
    [message] = [m for m in discord.posted(discord.add_user(OWNER)) if m["components"]][-1:]
    buttons = {b["label"]: b["custom_id"] for row in message["components"] for b in row["components"]}
    return message, buttons


@pytest.fixture
def discord_api() -> Iterator[FakeDiscordAPI]:
    from tests.fakes.discord_api import FakeDiscordAPI

    with FakeDiscordAPI() as fake:
        fake.add_user(OWNER)
        yield fake


@pytest.fixture
def start_discord(
    bot_config: dict, workspace: Any, tmp_path: Any, discord_api: FakeDiscordAPI
) -> Iterator[Callable[..., RunningDiscord]]:
    """Factory: ``start_discord(patch=None)`` runs the channel; every one stops after the test."""
    from tests.telegram_harness import make_runtime

    yield from starting(
        lambda: discord_config(bot_config, discord_api),
        lambda config: RunningDiscord(make_runtime(config, workspace, tmp_path), discord_api).start(),
    )
