"""The channel contract's kit (tests/channel_kit.py) on email, against real IMAP and SMTP servers
(tests/email_harness.py)."""

from __future__ import annotations

from tests.channel_kit import ChannelKit


class TestEmail(ChannelKit):
    channels = ("email",)
