"""One email message as readable Markdown plus an index record."""

from __future__ import annotations

import email
import email.policy
import re
from datetime import datetime, timezone
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from zoneinfo import ZoneInfo

from assistant_framework.html_text import html_to_text


def parse(raw: bytes) -> EmailMessage:
    return email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[return-value]


def message_date(msg: EmailMessage, tz: ZoneInfo) -> datetime | None:
    try:
        value = parsedate_to_datetime(str(msg.get("Date", "")))
    except (TypeError, ValueError, IndexError):
        return None
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(tz)


def body_text(msg: EmailMessage, limit: int) -> str:
    """The plain-text body (HTML converted when there is no text part), cut at ``limit``."""
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError):
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", "replace")
    if part.get_content_subtype() == "html":
        content = html_to_text(content)
    content = content.replace("\r\n", "\n").strip()
    if limit and len(content) > limit:
        content = content[:limit].rstrip() + "\n\n[... body cut at " + str(limit) + " characters]"
    return content


def attachment_names(msg: EmailMessage) -> list[str]:
    return [part.get_filename() or "(unnamed)" for part in msg.iter_attachments()]


def folder_slug(folder: str) -> str:
    """A safe single path segment for an IMAP folder name ("INBOX/Work" -> "INBOX_Work")."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", folder).strip("._") or "folder"
    return slug


def header(msg: EmailMessage, name: str) -> str:
    return " ".join(str(msg.get(name, "") or "").split())


def render(msg: EmailMessage, *, folder: str, uid: int, tz: ZoneInfo, body_limit: int) -> tuple[str, dict]:
    """Markdown text of a message and its index record (without the file path)."""
    when = message_date(msg, tz)
    subject = header(msg, "Subject") or "(no subject)"
    attachments = attachment_names(msg)
    body = body_text(msg, body_limit)
    lines = [f"# {subject}", "", f"- From: {header(msg, 'From')}", f"- To: {header(msg, 'To')}"]
    if header(msg, "Cc"):
        lines.append(f"- Cc: {header(msg, 'Cc')}")
    lines.append(f"- Date: {when.isoformat() if when else header(msg, 'Date')}")
    lines.append(f"- Folder: {folder} (UID {uid})")
    if attachments:
        lines.append("- Attachments: " + ", ".join(attachments))
    lines += ["", body, ""]
    record = {
        "folder": folder,
        "uid": uid,
        "date": when.isoformat() if when else None,
        "from": header(msg, "From"),
        "to": header(msg, "To"),
        "subject": subject,
        "title": subject,
        "attachments": attachments,
        "snippet": " ".join(body.split())[:200],
        "message_id": header(msg, "Message-ID"),
    }
    return "\n".join(lines), record
