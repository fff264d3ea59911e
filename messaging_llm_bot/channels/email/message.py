"""One mail in (parsed from its bytes) and one mail out (a threaded reply), with the standard library's
``email`` package; nothing else here knows a header.

In: the sender (one address in From), the thread (``Message-ID``, ``In-Reply-To``, ``References``), the text
(the plain part, else the HTML part as text; the quoted history below a reply cut off), the attachments,
the receiving server's ``Authentication-Results``, and whether the mail is automated (RFC 3834's
``Auto-Submitted``, a list or bulk mail, a bounce): such a mail is never answered, so two robots cannot
answer each other forever. Out: ``Re:`` subject, ``In-Reply-To`` and ``References`` (RFC 5322 3.6.4), a plain
text and an HTML part, ``Auto-Submitted: auto-replied``, and the files as attachments.
"""

from __future__ import annotations

import email
import email.parser
import email.policy
import email.utils
import hashlib
import mimetypes
import re
from dataclasses import dataclass
from email.message import EmailMessage, Message

from assistant_framework.html_text import html_to_text
from messaging_llm_bot.channels.contract import OutgoingFile
from messaging_llm_bot.channels.email.format import html_body, plain_text

#: The model sees at most this much of a mail's text.
MAX_TEXT_CHARS = 20_000
MAX_ATTACHMENTS = 10
MAX_REFERENCES = 20  # the References header of a reply keeps the root and the newest ones
_ATTRIBUTION = re.compile(r"^(On .{0,300} wrote:|Am .{0,300} schrieb .{0,200}:|-----\s*Original Message\s*-----)\s*$")
_MESSAGE_ID = re.compile(r"<[^<>\s]{1,500}>")


@dataclass(frozen=True)
class MailAttachment:
    """A file that came with a mail."""

    name: str
    mime: str
    data: bytes


@dataclass(frozen=True)
class MailIn:
    """What the channel reads of one received mail."""

    message_id: str  # "<...>", or "" when the mail has none
    sender: str  # the From address, lower case; "" when From is not exactly one address
    sender_name: str
    subject: str
    in_reply_to: str
    references: tuple[str, ...]
    text: str
    attachments: tuple[MailAttachment, ...]
    auth_results: tuple[str, ...]  # Authentication-Results headers, topmost first
    automated: str  # why it must not be answered ("" when it may be)

    @property
    def thread_root(self) -> str:
        """The first mail of the thread: what its conversation is named after."""
        if self.references:
            return self.references[0]
        return self.in_reply_to or self.message_id

    def thread_key(self) -> str:
        """A short stable name of the thread (the conversation id's last part)."""
        return hashlib.sha256(self.thread_root.encode("utf-8", "replace")).hexdigest()[:12]


def parse(raw: bytes, *, body: bool = True) -> MailIn:
    """Read one mail's bytes (never raises: a broken header reads as empty); without ``body`` only its header
    block is read (no text, no attachments decoded): enough to judge who sent it."""
    if body:
        msg = email.message_from_bytes(raw, policy=email.policy.default)
    else:
        msg = email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(raw)
    senders = email.utils.getaddresses([_header(msg, "From")])
    sender, name = ("", "")
    if len(senders) == 1 and "@" in senders[0][1]:
        name, sender = senders[0][0], senders[0][1].strip().lower()
    return MailIn(
        message_id=_first_id(_header(msg, "Message-ID")),
        sender=sender,
        sender_name=name[:200],
        subject=" ".join(_header(msg, "Subject").split())[:500],
        in_reply_to=_first_id(_header(msg, "In-Reply-To")),
        references=tuple(_MESSAGE_ID.findall(_header(msg, "References")))[:200],
        text=_text(msg) if body else "",
        attachments=_attachments(msg) if body else (),
        auth_results=tuple(str(value) for value in (msg.get_all("Authentication-Results") or [])),
        automated=_automated(msg),
    )


def _header(msg: Message, name: str) -> str:
    try:
        value = msg.get(name)
    except (ValueError, IndexError, TypeError):  # a header the parser cannot read
        return ""
    return str(value or "")


def _first_id(value: str) -> str:
    found = _MESSAGE_ID.search(value)
    return found.group(0) if found else ""


def _automated(msg: Message) -> str:
    auto = _header(msg, "Auto-Submitted").strip().lower()
    if auto and not auto.startswith("no"):
        return f"Auto-Submitted: {auto}"
    precedence = _header(msg, "Precedence").strip().lower()
    if precedence in ("bulk", "list", "junk"):
        return f"Precedence: {precedence}"
    if _header(msg, "List-Id") or _header(msg, "List-Unsubscribe"):
        return "a mailing list's mail"
    if _header(msg, "Return-Path").strip() == "<>":
        return "a bounce (empty Return-Path)"
    return ""


def _text(msg: Message) -> str:
    assert isinstance(msg, EmailMessage)
    body = msg.get_body(preferencelist=("plain", "html"))
    if body is None:
        return ""
    try:
        content = body.get_content()
    except (LookupError, ValueError, AssertionError):  # an unknown charset, a broken transfer encoding
        payload = body.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return ""
    if body.get_content_type() == "text/html":
        content = html_to_text(content[: 4 * MAX_TEXT_CHARS])
    return without_quote(content.replace("\r\n", "\n"))[:MAX_TEXT_CHARS].strip()


def without_quote(text: str) -> str:
    """A reply's own words: the quoted history below it ("On ... wrote:" and "> " lines) cut off."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if _ATTRIBUTION.match(line.strip()):
            rest = [one for one in lines[index + 1 :] if one.strip()]
            if not rest or rest[0].lstrip().startswith(">") or "Original Message" in line:
                return "\n".join(lines[:index]).rstrip()
    while lines and (lines[-1].lstrip().startswith(">") or not lines[-1].strip()):
        lines.pop()
    return "\n".join(lines)


def _attachments(msg: Message) -> tuple[MailAttachment, ...]:
    assert isinstance(msg, EmailMessage)
    found: list[MailAttachment] = []
    for part in msg.iter_attachments():
        if len(found) >= MAX_ATTACHMENTS or part.is_multipart():
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes) or not data:
            continue
        mime = part.get_content_type()
        name = part.get_filename() or f"attachment{mimetypes.guess_extension(mime) or ''}"
        found.append(MailAttachment(name=str(name), mime=mime, data=data))
    return tuple(found)


# -- out ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thread:
    """What a reply answers: the mail's id, subject and references (empty for a mail the bot starts)."""

    message_id: str = ""
    subject: str = ""
    references: tuple[str, ...] = ()


#: A mail the bot starts (a job's reply, a reminder): no thread to answer in.
NEW_THREAD = Thread()


def reply_subject(subject: str) -> str:
    """``Re: <subject>``, without piling up ``Re: Re:``."""
    subject = subject.strip()
    return subject if re.match(r"(?i)^re:", subject) else f"Re: {subject}" if subject else "Re: your message"


def compose(
    *,
    sender: str,
    to: str,
    markdown: str,
    thread: Thread,
    message_id: str,
    subject: str = "",
    files: tuple[OutgoingFile, ...] = (),
) -> EmailMessage:
    """The bot's mail to ``to``: a reply in ``thread`` (or a new mail with ``subject``), plain text and HTML,
    ``files`` attached. ``message_id`` is the ledger's: a resend after a crash has the same id."""
    out = EmailMessage()
    out["From"] = sender
    out["To"] = to
    out["Subject"] = reply_subject(thread.subject) if thread.message_id else (subject or "From your assistant")
    out["Date"] = email.utils.formatdate(localtime=False)
    out["Message-ID"] = message_id
    out["Auto-Submitted"] = "auto-replied"  # RFC 3834: another robot does not answer this
    if thread.message_id:
        out["In-Reply-To"] = thread.message_id
        chain = [*thread.references, thread.message_id]
        if len(chain) > MAX_REFERENCES:
            chain = [chain[0], *chain[-(MAX_REFERENCES - 1) :]]
        out["References"] = " ".join(dict.fromkeys(chain))
    out.set_content(plain_text(markdown))
    out.add_alternative(html_body(markdown), subtype="html")
    for file in files:
        mime = mimetypes.guess_type(file.path.name)[0] or "application/octet-stream"
        main, _, sub = mime.partition("/")
        out.add_attachment(file.path.read_bytes(), maintype=main, subtype=sub, filename=file.path.name)
    return out


def message_id_for(key: str, address: str) -> str:
    """A Message-ID made from ``key`` (an inbox item's id): the same reply sent again keeps its id."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return f"<{digest}@{address.rpartition('@')[2] or 'localhost'}>"
