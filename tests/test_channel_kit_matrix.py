"""The channel contract's kit (tests/channel_kit.py) on Matrix, against the run's Synapse (tests/matrix_harness.py)."""

from __future__ import annotations

from tests.channel_kit import ChannelKit


class TestMatrix(ChannelKit):
    channels = ("matrix",)
