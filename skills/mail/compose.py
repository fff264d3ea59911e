"""One mail as the skill writes it: recipients checked and bounded, a reply threaded to a fetched mail."""

from __future__ import annotations

from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid, parseaddr
from typing import Any, TypedDict, cast

from assistant_framework.workspace import Workspace

#: The mail collector's record of every fetched mail (collectors/mail/README.md).
FETCHED_INDEX = "collectors/mail/index.jsonl"
BODY_CHARS = 100_000
SUBJECT_CHARS = 300


def recipients(value: Any, limit: int) -> list[str]:
    """The addresses of ``to`` (a string of comma-separated addresses or a list), each ``local@domain``,
    at most ``limit``; ValueError names the first that is not an address."""
    items = value if isinstance(value, list) else [value or ""]
    if any(not isinstance(item, str) or "\r" in item or "\n" in item for item in items):
        raise ValueError("a recipient is not a single line of text")
    pairs = [pair for pair in getaddresses(items) if pair[1]]
    if not pairs:
        raise ValueError("no recipient: give to as an address (anna@example.org)")
    if len(pairs) > limit:
        raise ValueError(f"{len(pairs)} recipients: at most {limit} (mail.max_recipients)")
    found = []
    for name, address in pairs:
        local, _, domain = address.rpartition("@")
        if not local or "." not in domain or " " in address:
            raise ValueError(f"{address!r} is not a mail address")
        found.append(str(Address(display_name=name, addr_spec=address)))
    return found


class FetchedMail(TypedDict, total=False):
    """What the skill reads of a line of ``FETCHED_INDEX`` (the collector's ``MailItem`` has more keys)."""

    message_id: str
    subject: str


def fetched_mail(workspace: Workspace, message_id: str) -> FetchedMail:
    """The collector's record of the mail with this Message-ID (with or without its angle brackets)."""
    wanted = message_id.strip().strip("<>").strip()
    if not wanted:
        raise ValueError("reply_to is empty: give the Message-ID of a fetched mail")
    for record in reversed(workspace.read_jsonl(FETCHED_INDEX)):
        if isinstance(record, dict) and str(record.get("message_id") or "").strip().strip("<>") == wanted:
            return cast(FetchedMail, record)
    raise ValueError(f"no fetched mail has Message-ID {message_id!r}: reply only to a mail the mail collector fetched")


def compose(sender: str, to: list[str], subject: str, body: str, original: FetchedMail | None) -> EmailMessage:
    """The message to send; with ``original`` a reply (``Re:`` subject, ``In-Reply-To``, ``References``)."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ", ".join(to)
    if original is not None:
        first = str(original.get("subject") or "")
        subject = subject or (first if first.lower().startswith("re:") else f"Re: {first}")
        parent = "<" + str(original["message_id"]).strip().strip("<>") + ">"
        message["In-Reply-To"] = parent
        message["References"] = parent
    message["Subject"] = " ".join(subject.split())[:SUBJECT_CHARS]
    message["Date"] = formatdate(localtime=True)
    domain = parseaddr(sender)[1].rpartition("@")[2] or "assistant.local"
    message["Message-ID"] = make_msgid(domain=domain)
    message.set_content(body[:BODY_CHARS])
    return message
