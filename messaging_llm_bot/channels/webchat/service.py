"""The web chat's bot: the owner's messages from the page, answered in order through the durable inbox.

A message from the page is stored in the inbox (and the page's transcript) before the page is told it
arrived; the turn runs on the turn pool with its answer streamed to the open pages (hub.py); the reply is
recorded in the inbox, then written to the transcript part by part, each part recorded in the ledger, so a
restart answers a message left unanswered once and writes no part twice. Jobs and reminders of ``web:``
chats are delivered here too. The web server's handlers (page.py) find the running service by the runtime.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.inbox.item import InboxPayload
from messaging_llm_bot.agent.guard import ApprovalRequest
from messaging_llm_bot.channels.webchat.format import CAPABILITIES, CONVERSATION, split
from messaging_llm_bot.channels.webchat.hub import Hub
from messaging_llm_bot.channels.webchat.transcript import FileRef, Message, Transcript
from messaging_llm_bot.conversation.approvals import (
    NO_ANSWER,
    Answer,
    offers_conversation,
    question_text,
)
from messaging_llm_bot.conversation.attachments import SavedFile, sanitize_name, save_bytes
from messaging_llm_bot.conversation.commands import NOTHING_TO_STOP_TEXT, STOPPING_TEXT, run_command
from messaging_llm_bot.conversation.images import files_input
from messaging_llm_bot.conversation.owner_chat import OwnerChatService, OwnerChatTurns
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import TurnInput

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from assistant_framework.media.files_out import FileToSend
    from messaging_llm_bot.agent.turn import AgentEvent

log = logging.getLogger(__name__)

NAME = "webchat"
#: The longest message the page takes (characters).
MAX_TEXT_CHARS = 16_000

#: Types the page shows as pictures (and the model sees as images where a runner can).
PICTURE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


@dataclass(frozen=True)
class Upload:
    """A file the page sent: its name (made safe when saved), its type and its bytes (the server's body bound)."""

    name: str
    mime: str
    data: bytes


_RUNNING: dict[int, WebChatService] = {}
_RUNNING_LOCK = threading.Lock()


def running(runtime: object) -> WebChatService | None:
    """The web chat running with ``runtime``, or None (the page then says the chat is off)."""
    with _RUNNING_LOCK:
        return _RUNNING.get(id(runtime))


class WebChatService(OwnerChatService):
    """One running web chat (conversation/owner_chat.py): ``run()`` blocks until stopped; ``stop()`` from any
    thread. It takes no lock of its own: it runs inside the bot's process, beside its web server."""

    NAME, TITLE = NAME, "the web chat"
    CONVERSATION, PREFIX, WHERE = CONVERSATION, CONVERSATION.split(":")[0] + ":", "the web chat"

    def __init__(self, runtime: Runtime, *, stop_signals: Sequence[int] = (), manage_runtime: bool = True) -> None:
        super().__init__(runtime, stop_signals=stop_signals, manage_runtime=manage_runtime)
        self.hub = Hub()
        self.transcript = Transcript(runtime.workspace)
        self.asking: dict[str, str] = {}  # open questions by id: a reloaded page shows them again
        self.live = ""  # the answer being written now, as far as it came (a reloaded page shows it)
        self.turns: WebChatTurns  # made with the inbox, at the start

    def make_turns(self) -> WebChatTurns:
        return WebChatTurns(self, self.inbox)

    async def serve(self) -> None:
        await super().serve()
        with _RUNNING_LOCK:
            _RUNNING[id(self.runtime)] = self
        log.info("webchat: the Chat page answers in %s", CONVERSATION)

    async def stop_taking(self) -> None:
        with _RUNNING_LOCK:
            if _RUNNING.get(id(self.runtime)) is self:
                del _RUNNING[id(self.runtime)]
        await super().stop_taking()

    # -- from the page (the web server's loop) --------------------------------------

    async def take(self, client_id: str, text: str, upload: Upload | None = None) -> Message | None:
        """The owner's message (with a file the page sent), stored in the inbox and the transcript, its turn
        queued; None for one the inbox already took (the page sent it again)."""
        loop = self._loop
        if loop is None or not hasattr(self, "inbox") or self.stopping:
            raise RuntimeError("the web chat is stopping")
        inbox = self.inbox
        if text.strip().lower() == "/stop":  # at once, not behind the turn it stops
            await self.say(STOPPING_TEXT if self.stop_turn() else NOTHING_TO_STOP_TEXT)
            return None
        source = f"web:{client_id}"
        if upload is not None and await asyncio.to_thread(inbox.seen, source):
            return None  # the page sent the file again: not saved twice
        payload: InboxPayload = {"text": text}
        ref: FileRef | None = None
        if upload is not None:
            saved = await asyncio.to_thread(self._save, upload, text)
            payload["files"] = [saved.to_json()]
            # Named as saved (sanitize_name): a direction character showed "invoice_exe.pdf" for "invoice_fdp.exe".
            name = sanitize_name(upload.name)
            ref = FileRef(rel=saved.rel_path, name=name, mime=upload.mime, photo=saved.kind == "photo")
        item = await asyncio.to_thread(inbox.accept, source, CONVERSATION, payload, text)
        if item is None:
            return None
        shown = text or (ref["name"] if ref is not None else "")
        message, _ = await asyncio.to_thread(self.transcript.append, "owner", shown, f"in:{item.item_id}", 0, ref)
        self.hub.publish({"type": "message", "message": message.copy()})
        loop.call_soon_threadsafe(self.hand_on, item)
        return message

    def _save(self, upload: Upload, caption: str) -> SavedFile:
        kind = "photo" if upload.mime in PICTURE_TYPES else "file"
        today = date.today()
        return save_bytes(
            self.runtime.workspace, upload.data, upload.name, today, kind=kind, mime_type=upload.mime, caption=caption
        )

    async def answer(self, question_id: str, yes: bool) -> bool:
        """The owner's button; False when the question is no longer open."""
        loop = self._loop
        if loop is None:
            return False

        async def give() -> bool:
            return self.questions.answer(question_id, yes)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(give(), loop))

    async def say(self, text: str, key: str = "") -> None:
        """A message of the assistant's that is no turn's reply (a notice, /stop's answer)."""
        message, fresh = await asyncio.to_thread(self.transcript.append, "notice", text, key)
        if fresh:
            self.hub.publish({"type": "message", "message": message.copy()})

    async def ask_owner(self, request: ApprovalRequest) -> Answer:
        key = uuid.uuid4().hex
        future = self.questions.open(key, CONVERSATION, offers_conversation(request))
        text = question_text(request)
        self.asking[key] = text
        self.hub.publish({"type": "ask", "id": key, "text": text})
        try:
            answer = await self.questions.wait(future)
        finally:
            self.questions.close(key)
            self.asking.pop(key, None)
            self.hub.publish({"type": "asked", "id": key})
        if answer is None:
            await self.say(NO_ANSWER)
            return False
        return answer

    async def tell(self, text: str) -> bool:
        """A due reminder said in the chat, as a notice is."""
        await self.say(text)
        return True

    async def send_notice(self, text: str) -> bool:
        """A collector's notice or the spending caps' for the owner (the web chat may be the only channel)."""
        return await self.tell(text)


class WebChatTurns(OwnerChatTurns):
    """The web chat's turns (conversation/owner_chat.py): a message's words or its file for the model, a command
    answered, the answer streamed to the open pages, the reply written to the transcript part by part."""

    ALWAYS_STREAM = True  # the page shows every answer as it is written
    MAX_FILE_BYTES = CAPABILITIES.max_file_bytes

    def __init__(self, service: WebChatService, inbox: Inbox) -> None:
        super().__init__(service.runtime, inbox, NAME, CONVERSATION)
        self.service = service

    async def turn_input(self, item: InboxItem) -> TurnInput | str:
        runtime = self.runtime
        text = str(item.payload.get("text", ""))
        files = [SavedFile(**one) for one in item.payload.get("files") or [] if isinstance(one, dict)]
        if files:  # the words are the file's caption; the file is outside content (conversation/images.py)
            got = await files_input(runtime.workspace, list(files), runtime.settings, index=runtime.memory)
            if isinstance(got, str):
                return got
            return TurnInput(got.text, untrusted=True, images=got.images)
        if text.startswith("/"):
            answered = await asyncio.to_thread(run_command, runtime, CONVERSATION, text)
            if answered is not None:
                return answered
        self.service.hub.publish({"type": "typing"})
        return TurnInput(text)

    def on_event(self, event: AgentEvent) -> None:  # on the turn's thread
        if event.kind == "delta":
            self.service.live = str(event.data.get("text", ""))
            self.service.hub.publish({"type": "live", "text": self.service.live})

    async def turn_ended(self) -> None:
        self.service.live = ""

    async def show_file(self, item: InboxItem, one: FileToSend) -> str:
        """The ``send_file`` skill's file as a message of the assistant's (the page shows or offers it); its id."""
        ref = FileRef(rel=one.rel, name=sanitize_name(one.path.name), mime="", photo=one.photo)  # as take() names it
        key = f"file:{item.item_id}:{one.rel}"
        message, _ = await asyncio.to_thread(
            self.service.transcript.append, "assistant", one.caption or ref["name"], key, 0, ref
        )
        self.service.hub.publish({"type": "message", "message": message.copy()})
        return str(message["id"])

    async def deliver(self, item: InboxItem, reply: str) -> bool:
        """The one delivery path of turns and job runs: each part not yet recorded in the ledger is written to
        the transcript (once: it knows the part by its key) and recorded."""
        transcript, hub = self.service.transcript, self.service.hub
        parts = split(reply) or [reply]
        for index in range(self.inbox.parts_sent(item.item_id), len(parts)):
            message, _ = await asyncio.to_thread(transcript.append, "assistant", parts[index], item.item_id, index)
            hub.publish({"type": "message", "message": message.copy()})
            await asyncio.to_thread(self.inbox.record_part, item.item_id, index, message["id"])
        return True

    async def tell(self, item: InboxItem, text: str) -> None:
        await self.service.say(text, key=f"tell:{item.item_id}")
