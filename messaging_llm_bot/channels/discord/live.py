"""The Discord side of conversation/progress.py's live message: the answer growing in one message (sent once,
then edited).

Progress and the inbox's ledger (``record_live``) name a message by an integer; a Discord message id is one (a
snowflake), so the live message's id is Progress's as it is: the ledger records it as soon as it is sent, and a
restart after a crash edits that message instead of posting another. It is sent with its reply's nonce
(``nonce(key, LIVE_PART)``): a kill after Discord made it but before the ledger recorded it, and the restarted
turn's first send is answered with that same message (within Discord's few minutes), edited, never left beside
another.
"""

from __future__ import annotations

from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.discord.api import DiscordUnavailable
from messaging_llm_bot.channels.discord.channel import DiscordChannel, nonce
from messaging_llm_bot.channels.discord.format import MAX_TEXT_CHARS
from messaging_llm_bot.conversation.progress import BestEffortLive

LIVE_PART = "live"  # the nonce's part name of a reply's live message


class DiscordLive(BestEffortLive):
    """``LiveMessage`` in one Discord channel, its ids the messages' snowflakes; best effort (``BestEffortLive``)."""

    def __init__(self, channel: DiscordChannel, to: str, key: str = "") -> None:
        errors = (DiscordUnavailable, DeliveryError)
        super().__init__(DiscordCalls(channel, to, key), f"discord: the live message in {to}", errors)


class DiscordCalls:
    """The live message's calls, raising the channel's errors."""

    def __init__(self, channel: DiscordChannel, to: str, key: str = "") -> None:
        self.channel, self.to, self.key = channel, to, key  # key: the reply's (its inbox item)

    def fit(self, text: str) -> str:
        return text[:MAX_TEXT_CHARS]

    async def send(self, text: str) -> int | None:
        return int(await self.channel.post(self.to, text, nonce(self.key, LIVE_PART)))

    async def edit(self, message_id: int, text: str) -> bool:
        await self.channel.edit(self.to, str(message_id), text)
        return True

    async def typing(self) -> None:
        await self.channel.typing_in(self.to)

    async def delete(self, message_id: int) -> bool:
        return False  # a status line left above the answer is edited into its first part instead
