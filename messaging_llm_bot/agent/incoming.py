"""The message a frontend hands the agent: one record instead of loose parameters (nanobot's
``InboundMessage`` is the model), the same from Telegram, Signal, the terminal and the evals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assistant_framework.json_types import JsonObject
from assistant_framework.media.files_out import FileSender
from messaging_llm_bot.agent.guard import ApproveCallback
from messaging_llm_bot.agent.images import ImageInput
from messaging_llm_bot.agent.prompt import quote_outside
from messaging_llm_bot.agent.turn import AgentEvent

#: Told an answered turn's text (as the chat sends it, footer included) and the record of the writes it makes next
#: (``agent/keeping.py`` ``KeptTurn``, as JSON), from the turn's thread, before those writes.
AnswerCallback = Callable[[str, JsonObject], None]


@dataclass
class AgentMessage:
    """One message to answer, with who sent it, how far it is trusted and where progress goes."""

    conversation_id: str  # whose history and memory scope the turn uses ("tg:7", "signal:+49...")
    text: str  # what the sender wrote, or the frontend's text for a file or a voice note
    chat_id: int | str | None = None  # where the reply goes (for the skills: reminders, the audit line)
    user_id: int | str | None = None  # the sender
    message_id: int | str | None = None  # the chat's id of the message (logged with the turn)
    # The owner's own private chat: the owner's notes, facts and other chats' logs, and every
    # skill. False: a guest turn, with the guest skills on the chat's own folder only.
    owner_chat: bool = True
    untrusted: bool = False  # the text itself is outside content (an attachment's text)
    # Where the text comes from when it is not the sender's own words ("Message forwarded from
    # Mallory"): the model gets it quoted under this label, as outside content.
    outside: str | None = None
    approve: ApproveCallback | None = None  # asks the owner to confirm an "ask" call; None: refused
    on_event: Callable[[AgentEvent], None] | None = None  # progress: thinking, skill calls, deltas, done
    stream: bool = False  # read the model's answer as a stream (deltas; a stop cuts it off at once)
    # Images the model sees in this turn's requests (a vision runner answers it); ``text`` holds their
    # placeholder, which is all the history keeps of them (agent/images.py).
    images: tuple[ImageInput, ...] = ()
    job: str | None = None  # the scheduled job whose run this turn is (traced as a job turn)
    # The skills the turn may see and call, within the chat's own (a served client's ``skills``, docs/serve.md);
    # None: no further limit. A skill left out is neither in the prompt nor run when the model names it.
    skills: frozenset[str] | None = None
    # Facts may be taken from the turn into the owner's memory. False: a served client's turn, whose words are
    # not the owner's and whose memory stays apart from the owner's chats.
    extract_facts: bool = True
    # The chat's way to receive a file from the ``send_file`` skill (assistant_framework/media/files_out.py);
    # None: this turn has no chat to send to.
    send_file: FileSender | None = None
    # Hand the answer on before the turn writes its history and memory log (``AnswerCallback``); the caller keeps
    # the record of those writes until ``on_kept`` says they were made (agent/keeping.py). None: the turn
    # makes them before it returns.
    on_answer: AnswerCallback | None = None
    on_kept: Callable[[], None] | None = None  # told (in the turn's thread) once a handed-on answer's writes are made

    @property
    def model_text(self) -> str:
        """The text as the turn uses it: someone else's words quoted and labelled as outside content."""
        return quote_outside(self.text, self.outside) if self.outside is not None else self.text

    @property
    def from_outside(self) -> bool:
        """The message carries outside content (an attachment, a forward): the turn starts untrusted."""
        return self.untrusted or self.outside is not None
