"""Files the bot sends to a chat (the ``send_file`` skill): the checks, and the ledger that sends each once.

A skill call asks for a workspace file to go to the chat the turn answers. The file must be inside the turn's
workspace (the owner's, or a guest chat's own area), a regular file outside the framework's ``state/`` (its
tokens and secrets are never sent), and no larger than the channel's ``max_file_bytes``. Before it goes, the
call is recorded in ``state/files_out.jsonl`` (``assistant_framework/skills/once.py``, as the ``mail`` skill's
sends) under the message being answered (the durable inbox's item: the same after a restart), the path and the
file's SHA-256: a turn run again after a crash, asking for the same file with whatever caption, finds the record
and sends nothing (at most once). A send the channel refused is recorded as failed and may be tried again.
"""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from assistant_framework.json_types import JsonObject
from assistant_framework.skills.once import Action, ActionLedger, Earlier, OnceCall, TurnActions, TurnRun, done_at
from assistant_framework.workspace import Workspace

LEDGER = "state/files_out.jsonl"
#: Top-level workspace folders never sent: the framework's state (tokens, secrets, the inbox, the audit log).
NEVER_SENT = ("state",)
#: Pictures every chat app shows inline (sent as a photo; anything else goes as a file).
PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
#: A caption's bound (Telegram's is 1,024 characters).
MAX_CAPTION_CHARS = 1000


@dataclass(frozen=True)
class FileToSend:
    """One checked file: where it is, its workspace path, its caption, whether it goes as a photo, its bytes."""

    path: Path
    rel: str
    caption: str
    photo: bool
    size: int


#: The channel's send: the file out to the turn's chat, the platform's message id back; raises on failure.
Deliver = Callable[[FileToSend], str]


class FileRefused(ValueError):
    """A file that cannot be sent, with the sentence the model reads."""


@dataclass
class FileSender:
    """The ``send_file`` service of one turn (``SkillContext.services["send_file"]``): the channel's ``deliver``
    for the chat, its byte bound, and ``answering``: the key of the message answered (stable across restarts)."""

    ledger: Workspace  # the owner's workspace, where state/files_out.jsonl is
    answering: str
    deliver: Deliver
    max_bytes: int
    channel: str = ""
    #: What this run of the turn matched in the ledger (one sender per run of a turn).
    actions: TurnActions = field(default_factory=TurnActions)

    @property
    def _run(self) -> TurnRun:
        return TurnRun(self.answering, self.actions)

    def __call__(self, area: Workspace, path: str, caption: str = "") -> str:
        """Send ``path`` of ``area`` (the turn's workspace) to the chat; the sentence the model reads."""
        one = self.check(area, path, caption)
        digest = _sha256(one.path)

        def deliver() -> tuple[str, JsonObject]:
            try:
                message_id = self.deliver(one)
            except Exception as err:
                raise FileRefused(f"sending {one.rel} failed: {err}") from err
            kind = "photo" if one.photo else "file"
            return f"Sent {one.rel} ({_size(one.size)}) to this chat as a {kind}.", {"message_id": message_id}

        def said(done: Earlier) -> str:
            at = done_at(done, datetime.now().astimezone())
            went = "was already sent" if done.finished else "was already sent (or on its way when the bot stopped)"
            return f"{one.rel} {went} to this chat at {at} (for this message); not sent again."

        ledger = ActionLedger(self.ledger, LEDGER)
        return ledger.once(self._run, _file_action(one, digest), deliver, said)

    def done_before(self, area: Workspace, path: str, caption: str = "") -> bool:
        """This file was sent (or begun) for the message before, the caption worded as it may be: nothing will go."""
        call = self.once_call(area, path, caption)
        return call.ledger.earlier(call.run, call.action) is not None

    def once_call(self, area: Workspace, path: str, caption: str = "") -> OnceCall:
        """This file's send as the ledger matches it (the gate keeps the owner's no there)."""
        one = self.check(area, path, caption)
        return OnceCall(ActionLedger(self.ledger, LEDGER), self._run, _file_action(one, _sha256(one.path)))

    def check(self, area: Workspace, path: str, caption: str) -> FileToSend:
        """The file made ready to send, or ``FileRefused`` with why not."""
        rel = str(path or "").strip()
        if not rel:
            raise FileRefused("send_file needs a path: a file in the workspace (e.g. exports/report.csv)")
        target = area.path(rel)  # WorkspacePathError (a ValueError) for a path outside the workspace
        rel = area.relative(target)
        if PurePosixPath(rel).parts[:1] and PurePosixPath(rel).parts[0] in NEVER_SENT:
            raise FileRefused(f"{rel} is in the framework's state/ folder, which is never sent")
        try:
            info = target.stat()
        except FileNotFoundError:
            raise FileRefused(f"there is no file {rel} in the workspace") from None
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"{rel} is not a file (a folder?); send one file at a time")
        if info.st_size > self.max_bytes:
            raise FileRefused(
                f"{rel} is {_size(info.st_size)}; this chat takes files of at most {_size(self.max_bytes)}"
            )
        if info.st_size == 0:
            raise FileRefused(f"{rel} is empty")
        caption = str(caption or "")[:MAX_CAPTION_CHARS]
        photo = rel.lower().endswith(PHOTO_SUFFIXES)
        return FileToSend(path=target, rel=rel, caption=caption, photo=photo, size=info.st_size)


def _file_action(one: FileToSend, digest: str) -> Action:
    """A file out as the ledger matches it: this file with this content; the caption may be worded otherwise."""
    return Action("file", f"{one.rel}:{digest}", one.caption, {"path": one.rel, "sha256": digest})


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _size(size: int) -> str:
    return f"{size / 1024:.1f} KB" if size < 1024 * 1024 else f"{size / 1e6:.1f} MB"
