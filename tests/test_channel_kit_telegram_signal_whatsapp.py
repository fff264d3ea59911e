"""The channel contract's kit (tests/channel_kit.py) on the phone messengers: Telegram (FakeBotAPI), Signal
(FakeSignalDaemon) and WhatsApp (the fake Graph API)."""

from __future__ import annotations

from tests.channel_kit import ChannelKit


class TestTelegramSignalWhatsapp(ChannelKit):
    channels = ("telegram", "signal", "whatsapp")
