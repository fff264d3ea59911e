"""One email message as readable Markdown plus an index record."""

from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from zoneinfo import ZoneInfo

from assistant_framework.html_text import html_to_text

from .charsets import Decoded, decode_bytes, decode_header_value
from .records import MailItem

# A text part with NUL bytes, or mostly control characters, is binary (an Outlook .msg, a zip).
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f]")


def parse(raw: bytes) -> EmailMessage:
    return email.message_from_bytes(raw, policy=email.policy.default)


def message_date(msg: EmailMessage, tz: ZoneInfo, fallback: datetime | None = None) -> datetime | None:
    """The Date header in ``tz``; else ``fallback`` (the server's INTERNALDATE); else None."""
    try:
        value = parsedate_to_datetime(str(msg.get("Date", "")))
    except (TypeError, ValueError, IndexError):
        value = None
    if value is None:
        value = fallback
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(tz)


def _leaves(msg: EmailMessage) -> Iterator[EmailMessage]:
    for part in msg.walk():
        if not part.is_multipart():
            yield part


def _payload(part: EmailMessage) -> bytes:
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        return payload
    raw = part.get_payload()
    return raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else b""


def is_binary(data: bytes) -> bool:
    """NUL bytes, or more than 1 in 10 of the first 4 KB control characters."""
    head = data[:4096]
    return b"\x00" in head or len(_CONTROL.findall(head.decode("latin-1"))) * 10 > max(len(head), 1)


def is_attachment(part: EmailMessage) -> bool:
    """A named part, one marked as attachment, a non-text part, or text that is really binary."""
    if part.get_content_disposition() == "attachment" or part.get_filename():
        return True
    if part.get_content_maintype() != "text":
        return True
    return is_binary(_payload(part))


def body_part(msg: EmailMessage) -> EmailMessage | None:
    """The first plain-text leaf that is no attachment, else the first HTML one."""
    texts = [p for p in _leaves(msg) if p.get_content_type() in ("text/plain", "text/html") and not is_attachment(p)]
    return next((p for p in texts if p.get_content_subtype() == "plain"), None) or next(iter(texts), None)


def body_text(msg: EmailMessage, limit: int) -> tuple[str, Decoded | None]:
    """The plain-text body (HTML converted when there is no text part), cut at ``limit``, and how it was decoded."""
    part = body_part(msg)
    if part is None:
        return "", None
    decoded = decode_bytes(_payload(part), part.get_content_charset())
    content = decoded.text
    if part.get_content_subtype() == "html":
        content = html_to_text(content)
    content = content.replace("\r\n", "\n").strip()
    if limit and len(content) > limit:
        content = content[:limit].rstrip() + "\n\n[... body cut at " + str(limit) + " characters]"
    return content, decoded


def attachment_names(msg: EmailMessage) -> list[str]:
    """The message's attachments, plus text parts that are really binary or named (never shown as text)."""
    listed = (
        [] if msg.get_content_maintype() == "multipart" and not msg.is_multipart() else list(msg.iter_attachments())
    )
    body = body_part(msg)
    for part in _leaves(msg):
        if part is body or part.get_content_maintype() != "text" or any(part is p for p in listed):
            continue
        if is_attachment(part) and (_payload(part) or part.get_filename()):
            listed.append(part)
    return [
        part.get_filename() or f"(unnamed {part.get_content_type()}, {len(_payload(part))} bytes)" for part in listed
    ]


def folder_slug(folder: str) -> str:
    """A safe single path segment for an IMAP folder name ("INBOX/Work" -> "INBOX_Work")."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", folder).strip("._") or "folder"
    return slug


def header(msg: EmailMessage, name: str, hint: str | None = None) -> str:
    """A header as one line of text, decoded from its raw bytes (see charsets.decode_header_value)."""
    return header_decoded(msg, name, hint).text


def header_decoded(msg: EmailMessage, name: str, hint: str | None = None) -> Decoded:
    raw = next((value for key, value in msg.raw_items() if key.lower() == name.lower()), None)
    if raw is None:
        return Decoded("", "us-ascii")
    return decode_header_value(str(raw), hint)


def render(
    msg: EmailMessage, *, folder: str, uid: int, tz: ZoneInfo, body_limit: int, received: datetime | None = None
) -> tuple[str, MailItem]:
    """Markdown text of a message and its index record (without the file path).

    ``received`` (the server's INTERNALDATE) dates a message without a usable Date header.
    """
    when = message_date(msg, tz, received)
    hint = _body_charset(msg)
    fields = {name: header_decoded(msg, name, hint) for name in ("Subject", "From", "To", "Cc", "Date", "Message-ID")}
    subject = fields["Subject"].text or "(no subject)"
    attachments = attachment_names(msg)
    body, decoded = body_text(msg, body_limit)
    replaced = sum(f.replaced for f in fields.values()) + (decoded.replaced if decoded else 0)
    lines = [f"# {subject}", "", f"- From: {fields['From'].text}", f"- To: {fields['To'].text}"]
    if fields["Cc"].text:
        lines.append(f"- Cc: {fields['Cc'].text}")
    lines.append(f"- Date: {when.isoformat() if when else fields['Date'].text}")
    lines.append(f"- Folder: {folder} (UID {uid})")
    if attachments:
        lines.append("- Attachments: " + ", ".join(attachments))
    lines += ["", body, ""]
    record: MailItem = {
        "folder": folder,
        "uid": uid,
        "date": when.isoformat() if when else None,
        "from": fields["From"].text,
        "to": fields["To"].text,
        "subject": subject,
        "title": subject,
        "attachments": attachments,
        "snippet": " ".join(body.split())[:200],
        "message_id": fields["Message-ID"].text,
    }
    if replaced:
        record["replacement_chars"] = replaced
    if is_bulk(msg):
        record["bulk"] = True  # a mailing list, newsletter or automated mail: asked last by an ``ask`` rule
    return "\n".join(lines), record


def is_bulk(msg: EmailMessage) -> bool:
    """True for mail sent to many or by a machine: a list (List-Id, List-Unsubscribe), bulk or junk
    ``Precedence``, or ``Auto-Submitted`` other than ``no`` (RFC 2369, RFC 3834)."""
    try:
        if msg.get("List-Id") is not None or msg.get("List-Unsubscribe") is not None:
            return True
        precedence = str(msg.get("Precedence") or "").strip().lower()
        auto = str(msg.get("Auto-Submitted") or "").strip().lower()
    except Exception:  # noqa: BLE001 - a header the parser cannot read decides nothing
        return False
    return precedence in ("bulk", "list", "junk") or auto not in ("", "no")


def _body_charset(msg: EmailMessage) -> str | None:
    part = body_part(msg)
    return (part.get_content_charset() if part is not None else None) or msg.get_content_charset()
