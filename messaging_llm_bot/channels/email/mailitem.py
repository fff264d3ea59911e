"""A mail as the durable inbox keeps it: what the turn and the reply need, as JSON, and its conversation.

A conversation is one mail thread of one sender: ``mail:<address>:<thread key>`` (the thread key names the
first mail of the thread, so a reply to the bot's reply stays in it). The owner's jobs, reminders and notices
go to ``mail:<owner address>``: a new mail, not a reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

from assistant_framework.inbox.item import InboxPayload
from messaging_llm_bot.channels.email.message import MailIn, Thread
from messaging_llm_bot.conversation.attachments import SavedFile, SavedFileJson

PREFIX = "mail:"  # the registry's prefix of the email channel (conversation/routes.py)
_THREAD_KEY = re.compile(r"[0-9a-f]{12}")


def conversation_of(mail: MailIn) -> str:
    return f"{PREFIX}{mail.sender}:{mail.thread_key()}"


def address_of(conversation_id: str) -> str:
    """The address a conversation's mail goes to: ``mail:<address>[:<thread key>]``."""
    rest = conversation_id.removeprefix(PREFIX)
    head, sep, tail = rest.rpartition(":")
    return head if sep and _THREAD_KEY.fullmatch(tail) else rest


class MailJson(TypedDict):
    """The mail in its inbox payload, under ``email``."""

    sender: str
    sender_name: str
    message_id: str
    subject: str
    references: list[str]
    text: str
    files: list[SavedFileJson]


@dataclass(frozen=True)
class MailItem:
    """The inbox payload of one mail."""

    sender: str
    sender_name: str
    message_id: str
    subject: str
    references: tuple[str, ...]
    text: str
    files: tuple[SavedFile, ...]

    @property
    def thread(self) -> Thread:
        return Thread(self.message_id, self.subject, self.references)

    @classmethod
    def of(cls, mail: MailIn, files: tuple[SavedFile, ...]) -> MailItem:
        references = mail.references or ((mail.in_reply_to,) if mail.in_reply_to else ())
        return cls(mail.sender, mail.sender_name, mail.message_id, mail.subject, references, mail.text, files)

    def to_json(self) -> InboxPayload:
        mail: MailJson = {
            "sender": self.sender,
            "sender_name": self.sender_name,
            "message_id": self.message_id,
            "subject": self.subject,
            "references": list(self.references),
            "text": self.text,
            "files": [one.to_json() for one in self.files],
        }
        return {"email": mail}

    @classmethod
    def from_json(cls, payload: InboxPayload) -> MailItem | None:
        """The mail of an inbox payload; None for one this channel did not write."""
        data = payload.get("email")
        if not isinstance(data, dict) or not isinstance(data.get("sender"), str):
            return None
        files = tuple(SavedFile(**one) for one in data.get("files") or [] if isinstance(one, dict))
        return cls(
            sender=data["sender"],
            sender_name=str(data.get("sender_name") or ""),
            message_id=str(data.get("message_id") or ""),
            subject=str(data.get("subject") or ""),
            references=tuple(str(one) for one in data.get("references") or []),
            text=str(data.get("text") or ""),
            files=files,
        )
