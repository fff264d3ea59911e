"""The channel contract's kit (tests/channel_kit.py) on the team chats: Slack and Discord (their fake APIs)."""

from __future__ import annotations

from tests.channel_kit import ChannelKit


class TestSlackAndDiscord(ChannelKit):
    channels = ("slack", "discord")
