"""Mail collector: new IMAP messages as one Markdown file each, incremental by UIDVALIDITY+UID.

Credentials come from config (``password``) or the environment (``password_env``);
they are never written into the workspace, the state file or logs.
"""

from __future__ import annotations

import imaplib
from datetime import datetime
from email.message import EmailMessage
from zoneinfo import ZoneInfo

from assistant_framework.collectors.spec import CollectorConfig, CollectorRegistration, CollectorResult, SourceReport
from assistant_framework.collectors.state import load_cursor, save_cursor
from assistant_framework.hints import CLI
from assistant_framework.workspace import Workspace

from .imap_fetch import RUN_SECONDS, FolderBatch, MailConfigError, connect, fetch_new, list_folders, logout
from .records import FolderCursor, MailItem
from .render import folder_slug, parse, render

NAME = "mail"
BASE = f"collectors/{NAME}"

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "host": {"type": "string"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "security": {"enum": ["tls", "starttls", "plain"]},
        "username": {"type": "string"},
        "password": {"type": "string"},
        "password_env": {"type": "string"},
        "folders": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "max_messages_per_run": {"type": "integer", "minimum": 1},
        "body_chars": {"type": "integer", "minimum": 0},
        "connect_timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        "ca_file": {"type": "string"},
        "tls_verify": {"type": "boolean"},
    },
    "additionalProperties": False,
}


def register_collector(config: CollectorConfig) -> CollectorRegistration:
    """The collector registration (see docs/collectors.md)."""
    return {
        "name": NAME,
        "description": "New email from the user's IMAP folders, one readable Markdown file per message.",
        "interval_seconds": 600,
        "timeout_seconds": RUN_SECONDS,  # its IMAP session is cut then too (imap_fetch.connect)
        "generated_files": [f"{BASE}/<folder>/YYYY-MM-DD-<uid>.md", f"{BASE}/index.jsonl", f"{BASE}/new.json"],
        "file_structure": (
            "<folder>/YYYY-MM-DD-<uid>.md: one message (from, to, date, subject, attachments, plain-text body); "
            "index.jsonl: one JSON object per message (folder, uid, date, from, to, subject, snippet, file)."
        ),
        "config_schema": CONFIG_SCHEMA,
        "run": lambda workspace: collect(workspace, config),
        "setup": setup,
    }


def collect(workspace: Workspace, config: CollectorConfig) -> CollectorResult:
    """Fetch new messages of every configured folder; a failing folder does not stop the others."""
    tz = ZoneInfo(config.get("timezone") or "UTC")
    folders = config.get("folders") or ["INBOX"]
    limit = int(config.get("max_messages_per_run", 200))
    body_limit = int(config.get("body_chars", 20000))
    cursor = load_cursor(workspace, NAME)
    folder_cursors: dict[str, FolderCursor] = cursor.setdefault("folders", {})
    new_items: list[MailItem] = []
    errors: list[str] = []
    report: dict[str, SourceReport] = {}
    conn = connect(config)
    try:
        for folder in folders:
            try:
                batch = fetch_new(conn, folder, folder_cursors.get(folder, {}), limit)
            except (LookupError, imaplib.IMAP4.error, OSError) as exc:
                errors.append(f"folder {folder!r}: {exc}")
                report[folder] = {"ok": False, "error": f"folder {folder!r}: {exc}"}
                continue
            if batch.reset:
                errors.append(
                    f"folder {folder!r}: UIDVALIDITY changed to {batch.uidvalidity}; collecting it again from the start"
                )
            last_uid = 0 if batch.reset else int(folder_cursors.get(folder, {}).get("last_uid", 0))
            last_uid, skipped = _store_batch(
                workspace, folder, batch, last_uid, tz, body_limit, into=new_items, errors=errors
            )
            report[folder] = {
                "ok": True,
                "error": None,
                "items": len(batch.messages) - len(skipped),
                "skipped": skipped,
            }
            folder_cursors[folder] = {"uidvalidity": batch.uidvalidity, "last_uid": last_uid}
            # Saved per folder so a later failure does not re-deliver this folder's mail.
            save_cursor(workspace, NAME, cursor)
    finally:
        logout(conn)
    failed = [e for e in errors if "UIDVALIDITY changed" not in e]
    if folders and len(failed) == len(folders):
        raise RuntimeError("every mail folder failed: " + "; ".join(failed))
    return {
        "new_items": new_items,
        "summary": f"{len(new_items)} new messages in {len(folders)} folders",
        "errors": errors,
        "sources": report,
    }


def _store_batch(
    workspace: Workspace,
    folder: str,
    batch: FolderBatch,
    last_uid: int,
    tz: ZoneInfo,
    body_limit: int,
    *,
    into: list[MailItem],
    errors: list[str],
) -> tuple[int, list[dict[str, str]]]:
    """Store a folder's new messages (appended to ``into``); an unreadable one is skipped, not retried. The
    folder's new last UID and the messages skipped."""
    skipped: list[dict[str, str]] = []
    for uid, raw in batch.messages:
        try:
            item = _store(
                workspace, parse(raw), folder, uid, batch.uidvalidity, tz, body_limit, batch.received.get(uid)
            )
        except Exception as exc:  # noqa: BLE001 - one unreadable message must not cost the folder
            errors.append(f"folder {folder!r}: message UID {uid} skipped: {type(exc).__name__}: {exc}")
            skipped.append({"uid": str(uid), "reason": f"{type(exc).__name__}: {exc}"[:200]})
            last_uid = max(last_uid, uid)
            continue
        if item.get("replacement_chars"):
            errors.append(
                f"folder {folder!r}: message UID {uid}: {item['replacement_chars']} undecodable character(s) "
                "replaced with U+FFFD"
            )
        into.append(item)
        last_uid = max(last_uid, uid)
    return last_uid, skipped


def _store(
    workspace: Workspace,
    msg: EmailMessage,
    folder: str,
    uid: int,
    uidvalidity: int,
    tz: ZoneInfo,
    body_limit: int,
    received: datetime | None = None,
) -> MailItem:
    text, record = render(msg, folder=folder, uid=uid, tz=tz, body_limit=body_limit, received=received)
    day = record["date"][:10] if record["date"] else "undated"
    rel = f"{BASE}/{folder_slug(folder)}/{day}-{uid}.md"
    workspace.write_text(rel, text)
    record = {**record, "uidvalidity": uidvalidity, "file": rel}
    workspace.append_jsonl(f"{BASE}/index.jsonl", record)
    return record


def setup(config: CollectorConfig, workspace: Workspace) -> int:
    """Interactive check: log in, list the folders, print the config to use (no secrets)."""
    try:
        conn = connect(config)
    except (MailConfigError, ConnectionError, PermissionError) as exc:
        print(f"mail setup: {exc}")
        print(
            "Set collectors.mail.host, username, security and password_env (the NAME of an environment variable "
            "holding the password)."
        )
        return 1
    try:
        folders = list_folders(conn)
    finally:
        logout(conn)
    print(f"Logged in to {config.get('host')} as {config.get('username')!r}. Folders:")
    for name in folders:
        print(f"  {name}")
    print(f"Choose folders with: {CLI} config set collectors.mail.folders '[\"INBOX\"]'")
    return 0
