"""The channel contract's kit (tests/channel_kit.py) on the owner's own two: the terminal chat and the web
chat's page (tests/webchat_harness.py)."""

from __future__ import annotations

from tests.channel_kit import ChannelKit
from tests.webchat_harness import start_webchat  # noqa: F401 - the web chat's fixture (its own harness module)


class TestConsoleAndWebchat(ChannelKit):
    channels = ("console", "webchat")
