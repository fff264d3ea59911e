"""The mail collector's records: a line of ``collectors/mail/index.jsonl`` (an item of a run) and its cursor."""

from __future__ import annotations

from typing import NotRequired, TypedDict

#: One message as indexed: ``render`` makes it, ``_store`` adds ``uidvalidity`` and ``file``. The functional form
#: because one key is ``from``.
MailItem = TypedDict(
    "MailItem",
    {
        "folder": str,
        "uid": int,
        "date": str | None,
        "from": str,
        "to": str,
        "subject": str,
        "title": str,
        "attachments": list[str],
        "snippet": str,
        "message_id": str,
        "replacement_chars": NotRequired[int],
        "bulk": NotRequired[bool],  # a mailing list, newsletter or automated mail: asked last by an ask rule
        "uidvalidity": NotRequired[int],
        "file": NotRequired[str],
    },
)


class FolderCursor(TypedDict, total=False):
    """One folder's part of the collector's cursor (``cursor["folders"][folder]``)."""

    uidvalidity: int
    last_uid: int
