"""One chat turn's steps that are the same on every channel (docs/channels.md, "The life of a message").

A channel's turn runner reads its platform's message (who, where, what kind) and sends the answer its own
way; everything between is here, once: the files of a message saved in the right area and read for the
model (a guest's never into the owner's workspace or memory), a voice note's transcript or the sentence
that answers instead, the agent's ``AgentMessage`` and its call on the turn pool (the owner's first), the
notice that the model cannot see images (once per chat), the spoken reply when the chat asked for one,
and the ledger's records as parts go out.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileSender
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.attachments import VOICE_DISABLED, unsupported_text
from messaging_llm_bot.conversation.busy import BusyTurns
from messaging_llm_bot.conversation.chatflags import ChatFlags
from messaging_llm_bot.conversation.handed import HANDED
from messaging_llm_bot.conversation.images import VISION_MISSING, VISION_MISSING_FLAG, FilesInput, area_for
from messaging_llm_bot.conversation.pool import GIVEN_UP, TurnPool
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turns import RunningTurns
from messaging_llm_bot.conversation.voice import VOICE_FLAG, VoiceNote, voice_notes, wants_voice
from messaging_llm_bot.llm.transcribe import transcription_settings

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from assistant_framework.config.settings import TranscriptionSettings
    from assistant_framework.memory.service import MemoryService
    from messaging_llm_bot.agent.guard import ApproveCallback
    from messaging_llm_bot.agent.images import ImageInput
    from messaging_llm_bot.agent.incoming import AgentMessage
    from messaging_llm_bot.agent.turn import AgentEvent, TurnResult
    from messaging_llm_bot.llm.transcribe import Transcription

log = logging.getLogger(__name__)

FAILED_REPLY = "Sorry, something went wrong while answering. Please try again."

#: Saves a message's files under ``area`` (dated ``today``) and builds the model's input, with the owner's
#: memory as the documents' ``index`` (None in a guest's chat); the sentence that answers instead when none can go.
SaveFiles = Callable[[Workspace, date, "MemoryService | None"], Awaitable["FilesInput | str"]]


def transcript_failed(error: str | None) -> str:
    """The answer to a voice note that could not be transcribed."""
    return f"🎙 I could not transcribe that voice note: {error or 'the transcript was empty'}."


#: A voice note transcribed with the configured endpoint (the channel fetches the note's bytes).
Transcribe = Callable[["TranscriptionSettings"], Awaitable["Transcription"]]


def outside_name(name: str) -> str:
    """Someone's name as it may stand in ``Received.outside``'s label: one line, no brackets (names are theirs)."""
    return " ".join(str(name).replace("[", "(").replace("]", ")").split())[:80] or "someone"


@dataclass(frozen=True)
class Received:
    """One message as the channel read it for the model: its kind, and how to get what the model reads of it."""

    kind: str  # "text", "document", "photo", "voice"; any other kind is answered with ``unsupported``
    text: str = ""  # a text's words as the model gets them (a mention of the bot taken out)
    save: SaveFiles | None = None  # a document's or a photo's (an album's) files saved and read
    transcribe: Transcribe | None = None  # a voice note's transcript
    echo: Callable[[str], Awaitable[object]] | None = None  # shows the transcript in the chat (best effort)
    outside: str | None = None  # the label of a text or transcript that is someone else's words (a forward)
    unsupported: str = ""  # what a kind not taken is answered; "": ``unsupported_text`` of the kind


@dataclass(frozen=True)
class TurnInput:
    """What the model reads of one message."""

    text: str
    untrusted: bool = False  # files: someone else's words
    outside: str | None = None
    images: tuple[ImageInput, ...] = ()
    notice: str = ""  # a sentence added to the reply (the model cannot see images)


@dataclass(frozen=True)
class TurnRequest:
    """What a channel read from one message for the model: who, where, and the text the model gets."""

    conversation_id: str
    text: str
    chat_id: int | str | None  # the platform's chat, as the agent's records show it
    user_id: int | str | None
    message_id: int | str | None
    owner_chat: bool  # the owner's own one-to-one chat: the only one that sees the owner's data
    from_owner: bool  # the owner sent it (in any chat): their model calls go first
    untrusted: bool = False  # files: someone else's words
    outside: str | None = None  # the label of outside content quoted in the turn (a forward, a recording)
    images: tuple[ImageInput, ...] = ()
    notice: str = ""  # a sentence added to the reply (the model cannot see images)
    send_file: FileSender | None = None  # the chat's way to receive a file from the send_file skill


def agent_incoming(
    request: TurnRequest,
    stream: bool,
    approve: ApproveCallback | None = None,
    on_event: Callable[[AgentEvent], None] | None = None,
) -> AgentMessage:
    """The agent's record of ``request``, the same on every channel (``stream``: read the model's answer as a
    stream; ``approve``: how the owner confirms an ``ask`` call, None: refused)."""
    from messaging_llm_bot.agent.incoming import AgentMessage  # on use: start-up does not need the agent

    return AgentMessage(
        request.conversation_id,
        request.text,
        chat_id=request.chat_id,
        user_id=request.user_id,
        message_id=request.message_id,
        # Only the owner's own one-to-one chat sees the owner's notes, facts and other chats' logs.
        owner_chat=request.owner_chat,
        untrusted=request.untrusted,
        outside=request.outside,
        approve=approve,
        on_event=on_event,
        stream=stream,
        images=request.images,
        send_file=request.send_file,
    )


class ChannelTurns:
    """The shared part of a channel's turn runner: the turns running now, the turn pool, the chat's flags."""

    #: Ask the model for a stream whatever ``llm.stream`` says: the channel shows every answer as it is written
    #: (the web chat's page).
    ALWAYS_STREAM = False

    def __init__(self, runtime: Runtime, inbox: Inbox, channel: str) -> None:
        self.runtime = runtime
        self.inbox = inbox
        self.channel = channel  # for the log lines
        self.stopping = False  # set on shutdown: no new turns; their items stay in the inbox
        self.stop_event = asyncio.Event()  # set on shutdown: a reply waiting to be sent stops waiting
        self._active = RunningTurns()
        self.flags = ChatFlags(runtime.workspace)  # /voice choices, notices told once
        #: The turns a new message of the same person may join (busy modes, conversation/busy.py).
        self.busy: BusyTurns[InboxItem] = BusyTurns()
        # Turns run here, not in asyncio's default pool (6 threads on 2 cores, also the inbox's):
        # llm.max_concurrency limits.
        self.pool = TurnPool(lambda: self.runtime.settings)

    @property
    def active(self) -> int:
        """How many turns are running now."""
        return len(self._active)

    async def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for running turns; True when none is left."""
        return await self._active.wait_idle(timeout)

    def cancel_all(self) -> int:
        """Cancel the running turns (their items stay pending: no completion happens); returns how many."""
        return self._active.cancel_all()

    async def files(
        self, conversation_id: str, owner_chat: bool, timezone: str, save: SaveFiles
    ) -> tuple[FilesInput | str, str]:
        """A message's files for the model, and the notice the reply carries (the model cannot see images,
        said once per chat). A guest's files go to the chat's own area and stay out of the owner's memory."""
        today = datetime.now(ZoneInfo(timezone)).date()
        area = area_for(self.runtime.workspace, conversation_id, owner_chat)
        got = await save(area, today, self.runtime.memory if owner_chat else None)
        notice = ""
        if (
            isinstance(got, FilesInput)
            and got.vision_missing
            and await asyncio.to_thread(self.flags.first_time, conversation_id, VISION_MISSING_FLAG)
        ):
            notice = VISION_MISSING
        return got, notice

    async def read(self, conversation_id: str, owner_chat: bool, got: Received) -> TurnInput | str:
        """What the model reads of a message, or the one sentence that answers it instead (a file not fetched,
        too large or unreadable, no transcription configured, a transcript that failed, a kind not taken)."""
        if got.kind == "text":
            return TurnInput(got.text, outside=got.outside)
        if got.kind in ("document", "photo") and got.save is not None:
            timezone = self.runtime.settings.runtime.timezone
            files, notice = await self.files(conversation_id, owner_chat, timezone, got.save)
            if isinstance(files, str):
                return files
            return TurnInput(files.text, untrusted=True, images=files.images, notice=notice)
        if got.kind == "voice" and got.transcribe is not None:
            config = transcription_settings(self.runtime.settings.llm)
            if config is None:
                return VOICE_DISABLED
            result = await got.transcribe(config)
            if not result.ok:
                return transcript_failed(result.error)
            if got.echo is not None:  # what was understood, as it is
                try:
                    await got.echo(f"🎙 {result.text}")
                except Exception as err:  # noqa: BLE001 - the platform's errors: a courtesy, the note is still answered
                    log.warning("%s: could not show the transcript in %s: %s", self.channel, conversation_id, err)
            return TurnInput(result.text, outside=got.outside)
        return got.unsupported or unsupported_text(got.kind)

    async def ask_agent(
        self,
        request: TurnRequest,
        *,
        approve: ApproveCallback | None = None,
        on_event: Callable[[AgentEvent], None] | None = None,
    ) -> str:
        """The agent's answer to ``request`` (on the turn pool; the owner's model calls first), as the reply text."""
        from messaging_llm_bot.agent.turn import reply_text  # on use: start-up does not need the agent

        agent = self.runtime.agent
        # llm.stream asks the model for a stream (/stop then cuts it off at once); the channel decides whether
        # the message shows it.
        incoming = agent_incoming(request, agent.settings.llm.stream or self.ALWAYS_STREAM, approve, on_event)
        stop = functools.partial(agent.stop, request.conversation_id, GIVEN_UP)  # a stop that gives up on the turn
        handed = HANDED.get()
        answered: TurnResult | str
        if handed is None:
            answered = await self.pool.run(agent.handle, incoming, owner_turn=request.from_owner, stop=stop)
        else:  # an inbox item's turn: the answer is taken before the turn writes its history (conversation/handed.py)
            answered = await handed.take(
                lambda on_answer: self.pool.run(
                    agent.handle,
                    dataclasses.replace(incoming, on_answer=on_answer, on_kept=handed.noted),
                    owner_turn=request.from_owner,
                    stop=stop,
                )
            )
        text = answered if isinstance(answered, str) else reply_text(answered)
        return f"{text}\n\n{request.notice}" if request.notice else text

    async def speak(
        self, conversation_id: str, answered_voice: bool, reply: str, send: Callable[[int, VoiceNote], Awaitable[None]]
    ) -> None:
        """Send the reply as voice notes too when the chat wants it (conversation/voice.py); the text is
        already delivered, so a failure to make the audio leaves it as the answer with one log line. ``send``
        raises on a failed send, which ends the voice reply."""
        voice = self.runtime.settings.voice
        if not voice.tts.usable:  # never spoken (wants_voice): the chat's choice need not be read
            return
        chosen = await asyncio.to_thread(self.flags.get, conversation_id, VOICE_FLAG)
        if not wants_voice(voice, chosen, answered_voice):
            return
        notes = await asyncio.to_thread(voice_notes, voice, reply)
        if isinstance(notes, str):
            log.warning("%s: the reply in %s stays text only: %s", self.channel, conversation_id, notes)
            return
        for index, note in enumerate(notes):
            await send(index, note)

    def part_out(self, item_id: str) -> None:
        """A part of the item's reply is out (``record_part``); ``ItemTurns`` lets the turn's writes go on."""

    async def record_live(self, item_id: str, message_id: int) -> None:
        """Note the live (streamed) message of ``item_id``'s turn: a crash leaves it to be edited, not orphaned."""
        try:
            # In the event loop, not a worker thread: the thread pool may be busy with turns, and every
            # millisecond between the send and this record is a moment where a kill leaves the message.
            self.inbox.record_live(item_id, message_id)
        except (OSError, KeyError) as err:  # best effort: without it a crash may leave this message behind
            log.warning("%s: could not record live message %s of %s: %s", self.channel, message_id, item_id, err)

    async def record_part(self, item_id: str, index: int, message_id: int) -> None:
        """Note in the ledger that part ``index`` of ``item_id``'s reply is out (a crash resends only the rest)."""
        try:
            # In the event loop, as ``record_live``: the ledger is written without fsync and its lock is never held
            # across one (inbox/store.py), and the moment between the send and this record, where a kill would send
            # the part again, stays short (a thread hand-off cost more than the write).
            self.inbox.record_part(item_id, index, message_id)
            self.part_out(item_id)
        except (OSError, KeyError) as err:  # the part is out; a crash before completion would only resend it
            log.warning("%s: could not record part %d of %s in the ledger: %s", self.channel, index, item_id, err)
