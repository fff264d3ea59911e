"""A link into a folder beside the workspace whose name starts with the workspace's own (``ws`` and
``ws-private``) leads outside like any other (issue 34.12, found by the mutation audit: a prefix test
on the resolved path, ``str(path).startswith(str(root))``, passed the whole suite). Refused by every
Workspace read, write and listing, and by the Telegram bot's ``file`` skill: the model never sees what
lies there."""

from __future__ import annotations

import json
import os

import pytest

from assistant_framework.workspace import Workspace, WorkspacePathError
from tests.telegram_harness import OWNER, texts

SECRET = "SIBLING-FOLDER-SECRET"


def _sibling(root) -> None:
    """``<root>-private/secret.md`` beside the workspace, and links to it from inside (a file and a folder)."""
    sibling = root.parent / f"{root.name}-private"
    sibling.mkdir()
    (sibling / "secret.md").write_text(SECRET)
    os.symlink(sibling, root / "notes" / "shelf")
    os.symlink(sibling / "secret.md", root / "notes" / "secret-link.md")


def test_a_link_into_a_folder_named_like_the_workspace_leads_outside(tmp_path):
    ws = Workspace(tmp_path / "ws")
    _sibling(ws.root)
    for rel in ("notes/shelf/secret.md", "notes/secret-link.md", "notes/shelf"):
        with pytest.raises(WorkspacePathError, match="outside"):
            ws.path(rel)
    with pytest.raises(WorkspacePathError):
        ws.write_text("notes/shelf/new.md", "x")
    assert not (tmp_path / "ws-private" / "new.md").exists()
    assert not [rel for rel in ws.list("**/*", files_only=False) if "shelf" in rel or "secret" in rel]


def test_the_file_skill_reads_nothing_in_a_folder_named_like_the_workspace(fake, start_bot, chat_server, workspace):
    _sibling(workspace.root)
    start_bot()
    calls = [
        {"action": "read", "path": "notes/shelf/secret.md"},
        {"action": "read", "path": "notes/secret-link.md"},
        {"action": "list", "path": "notes"},
    ]
    for n, args in enumerate(calls, 1):
        chat_server.enqueue(json.dumps({"skill": "file", "args": args}), json.dumps({"reply": f"done {n}"}))
        fake.send_message(f"step {n}", user_id=OWNER)
        fake.wait_for(lambda n=n: any(f"done {n}" in t for t in texts(fake)), timeout=15)
    assert SECRET not in json.dumps([r["messages"] for r in chat_server.chat_requests])
    assert "shelf" not in json.dumps(chat_server.chat_requests[-1]["messages"][-1])  # not even listed
