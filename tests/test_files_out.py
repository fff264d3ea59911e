"""Files out (issue 44, docs/actions.md "Files out"): the ``send_file`` skill sends a workspace file to the chat
the turn answers, once (also when a SIGKILL comes right after the call), confined to the workspace, never from
``state/``, within the channel's size bound, and asks the owner in a turn with outside content."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import pytest

from assistant_framework.media.files_out import LEDGER, FileRefused, FileSender, FileToSend
from assistant_framework.skills.loader import load_skill_folder
from assistant_framework.skills.spec import SkillContext
from assistant_framework.workspace import Workspace, WorkspacePathError
from tests.crash_bot import BotProcess, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.telegram_harness import OWNER, approval_question, decline, texts

CSV = b"date,amount,what\n2026-11-02,12.50,bread\n2026-11-03,40.00,train\n"
CALL = json.dumps({"skill": "send_file", "args": {"path": "exports/expenses.csv", "caption": "November"}})
SKILL = load_skill_folder(Path(__file__).resolve().parent.parent / "skills" / "send_file")


def _uploads(fake: FakeBotAPI, method: str = "sendDocument", field: str = "document") -> list[bytes]:
    return [c["params"][field]["content"] for c in fake.calls(method) if c["status"] == 200]


@pytest.mark.timeout(90)
def test_a_csv_is_sent_once_also_after_a_sigkill_right_after_the_call(tmp_path, bot_config):
    """The bot process is killed as soon as the Bot API has the file (its turn not finished: the model's answer
    after the send is held back); the restart runs the turn again, the model asks for the file again, and the
    ledger sends nothing twice."""
    release, results = threading.Event(), []

    def model(request: dict) -> str:
        last = str(request["messages"][-1]["content"])
        if "Result of skill 'send_file'" not in last:
            return CALL
        results.append(last)
        if len(results) == 1:
            release.wait(30)  # the first run is killed while it waits here
        return '{"reply": "Sent."}'

    with FakeBotAPI() as fake, FakeChatServer() as server:
        server.set_handler(model)
        runner = {"name": "fake", "base_url": server.base_url, "model": "fake-model", "timeout_seconds": 60}
        base = dict(bot_config, llm={**bot_config["llm"], "runners": [runner]})
        config = write_bot_config(tmp_path / "config.json", base, fake)
        workspace = tmp_path / "workspace"
        (workspace / "exports").mkdir(parents=True)
        (workspace / "exports" / "expenses.csv").write_bytes(CSV)
        with BotProcess(config, workspace, tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            fake.send_message("send me November's expenses", user_id=OWNER)
            fake.wait_for(lambda: _uploads(fake), timeout=30)
            bot.kill()
            release.set()
            bot.start().wait_ready()
            fake.wait_for(lambda: "Sent." in sent_texts(fake, OWNER), timeout=30)
            assert bot.terminate() == 0
        assert _uploads(fake) == [CSV]  # the file's bytes, once
        document = fake.calls("sendDocument")[0]["params"]
        assert document["document"]["filename"] == "expenses.csv" and document["caption"] == "November"
        assert "already sent" in results[-1]  # the run after the restart was told, and sent nothing


def test_a_picture_goes_as_a_photo_and_a_forwarded_turn_asks_first(fake, start_bot, chat_server, workspace):
    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (40, 30), "red").save(picture, "PNG")
    workspace.path("charts").mkdir()
    workspace.path("charts/spending.png").write_bytes(picture.getvalue())
    workspace.path("exports").mkdir()
    workspace.path("exports/expenses.csv").write_bytes(CSV)
    start_bot()
    chat_server.enqueue(
        json.dumps({"skill": "send_file", "args": {"path": "charts/spending.png"}}), '{"reply": "Here."}'
    )
    fake.send_message("show me the chart")
    fake.wait_for(lambda: "Here." in texts(fake))
    assert _uploads(fake, "sendPhoto", "photo") == [picture.getvalue()]  # trusted: unasked
    # A forwarded message is outside content: the same skill now waits for the owner, and declined sends nothing.
    chat_server.enqueue(CALL, '{"reply": "Not sent."}')
    fake.send_message("mail me the expenses csv please", forwarded_from="Mallory")
    question, _ = approval_question(fake)
    assert "send_file" in question["text"]
    decline(fake, question)
    fake.wait_for(lambda: "Not sent." in texts(fake), timeout=15)
    assert _uploads(fake) == []
    rows = [(row["path"], row["status"]) for row in workspace.read_jsonl(LEDGER)]
    # The photo: sending, sent; the csv: only the owner's no (kept, so a replay after a kill is not asked again).
    assert rows == [
        ("charts/spending.png", "begun"),
        ("charts/spending.png", "done"),
        ("exports/expenses.csv", "declined"),
    ]


def test_signal_sends_the_file_as_an_attachment(start, daemon, chat_server, workspace):
    from tests.signal_harness import OWNER as SIGNAL_OWNER

    workspace.path("exports").mkdir()
    workspace.path("exports/expenses.csv").write_bytes(CSV)
    start()
    chat_server.enqueue(CALL, '{"reply": "Sent."}')
    daemon.message(SIGNAL_OWNER, "send me November's expenses")
    sent = daemon.wait_sent(2, timeout=15)
    (upload,) = [s for s in sent if s["files"]]
    assert upload["files"][0]["content"] == CSV and upload["files"][0]["filename"] == "expenses.csv"
    assert upload["message"] == "November" and sent[-1]["message"] == "Sent."


# -- in-process: the checks of one call ----------------------------------------------------------------------------


def _sender(workspace: Workspace, max_bytes: int = 1000) -> tuple[FileSender, list[FileToSend]]:
    delivered: list[FileToSend] = []

    def deliver(one: FileToSend) -> str:
        delivered.append(one)
        return str(len(delivered))

    return FileSender(workspace, "tg:1:42", deliver, max_bytes), delivered


def _call(workspace: Workspace, sender: FileSender, path: str, caption: str = "") -> object:
    context = SkillContext(services={"send_file": sender})
    return SKILL.run(workspace, {"path": path, "caption": caption}, context)


def test_only_files_of_the_workspace_outside_state_within_the_bound_are_sent(workspace, tmp_path):
    sender, delivered = _sender(workspace, max_bytes=100)
    outside = tmp_path / "secret.txt"
    outside.write_text("the owner's password")
    os.symlink(outside, workspace.path("notes/link.txt"))
    workspace.write_text("state/web/token", "t0ken")
    workspace.path("exports").mkdir()
    workspace.path("exports/big.csv").write_bytes(b"x" * 101)
    workspace.path("exports/small.csv").write_bytes(b"x" * 100)
    for path in ("../secret.txt", str(outside), "notes/link.txt"):
        with pytest.raises(WorkspacePathError):
            _call(workspace, sender, path)
    with pytest.raises(FileRefused, match="state/ folder, which is never sent"):
        _call(workspace, sender, "state/web/token")
    with pytest.raises(FileRefused, match="at most 100 bytes|at most 0.1 KB"):
        _call(workspace, sender, "exports/big.csv")
    with pytest.raises(FileRefused, match="no file"):
        _call(workspace, sender, "exports/none.csv")
    with pytest.raises(FileRefused, match="not a file"):
        _call(workspace, sender, "exports")
    assert delivered == []
    assert _call(workspace, sender, "exports/small.csv") == "Sent exports/small.csv (0.1 KB) to this chat as a file."
    assert [one.rel for one in delivered] == ["exports/small.csv"]


def test_the_same_file_for_another_message_or_changed_goes_again_and_a_failed_send_may_be_retried(workspace):
    sender, delivered = _sender(workspace)
    workspace.path("exports").mkdir()
    workspace.path("exports/a.csv").write_bytes(b"one")
    _call(workspace, sender, "exports/a.csv")
    assert "already sent" in str(_call(workspace, sender, "exports/a.csv"))  # the same message, run again
    workspace.path("exports/a.csv").write_bytes(b"two")
    _call(workspace, sender, "exports/a.csv")  # changed since: sent again
    later = FileSender(workspace, "tg:1:43", sender.deliver, 1000)
    _call(workspace, later, "exports/a.csv")  # asked again in a later message: sent again
    assert len(delivered) == 3

    def refused(one: FileToSend) -> str:
        raise RuntimeError("Bad Request: chat not found")

    failing = FileSender(workspace, "tg:1:44", refused, 1000)
    with pytest.raises(FileRefused, match="chat not found"):
        _call(workspace, failing, "exports/a.csv")
    _call(workspace, FileSender(workspace, "tg:1:44", sender.deliver, 1000), "exports/a.csv")  # tried again: sent
    assert len(delivered) == 4


def test_without_a_chat_to_send_to_the_skill_says_so(workspace):
    workspace.path("exports").mkdir()
    workspace.path("exports/a.csv").write_bytes(b"one")
    with pytest.raises(ValueError, match="cannot receive files"):
        SKILL.run(workspace, {"path": "exports/a.csv"}, SkillContext())
