"""How a channel says a send failed, in the one shape the conversation service reads (docs/channels.md):
``channels/contract.py`` names it for the adapters; it lives here because the service catches it."""

from __future__ import annotations


class DeliveryError(Exception):
    """A channel could not deliver; ``for_good`` when sending again cannot help (blocked, chat gone)."""

    def __init__(self, message: str, *, for_good: bool = False) -> None:
        super().__init__(message)
        self.for_good = for_good
