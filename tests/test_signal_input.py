"""The Signal frontend with unusual input: the real SignalService against FakeSignalDaemon and FakeChatServer."""

from __future__ import annotations

import logging

import pytest

from assistant_framework.inbox import Inbox
from messaging_llm_bot.conversation.item_turns import ItemTurns
from tests.fakes.signal_daemon import RpcError
from tests.signal_harness import OWNER, wait_for
from tests.telegram_harness import busy_queue


def test_a_long_message_is_answered_as_text_not_saved_as_a_file(start, daemon, chat_server, workspace):
    # A body over 2000 bytes travels as a long-text attachment; signal-cli puts the whole text in
    # "message" and still lists the attachment (text/x-signal-plain).
    long_text = "Please summarise this article. " + "The quick brown fox jumps over the lazy dog. " * 60
    att = daemon.add_attachment(long_text.encode("utf-8"), "text/x-signal-plain")
    chat_server.enqueue('{"reply": "A fox jumps."}')
    start()
    daemon.message(OWNER, long_text, attachments=[att])
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "A fox jumps."
    prompt = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert prompt.startswith("Please summarise this article.") and "[Attachment]" not in prompt
    assert not list(workspace.root.glob("inbox/*/*"))


def test_every_attachment_of_a_message_is_saved_and_named_to_the_model(start, daemon, chat_server, workspace):
    # Picking three photos (or a photo and a PDF) in Signal sends one message with all of them.
    first = daemon.add_attachment(b"\xff\xd8 photo one", "image/jpeg", filename="one.jpg")
    second = daemon.add_attachment(b"\xff\xd8 photo two", "image/jpeg", filename="two.jpg")
    third = daemon.add_attachment(b"%PDF-1.4 menu", "application/pdf", filename="menu.pdf")
    chat_server.enqueue('{"reply": "Got all three."}')
    start()
    daemon.message(OWNER, "from the holiday", attachments=[first, second, third])
    [sent] = daemon.wait_sent(1)
    # No runner takes images here: the chat is told so once, beside the answer (tests/test_photos.py).
    assert sent["message"].startswith("Got all three.") and "I cannot see images" in sent["message"]
    saved = {p.name: p.read_bytes() for p in workspace.root.glob("inbox/*/*")}
    assert saved == {"one.jpg": b"\xff\xd8 photo one", "two.jpg": b"\xff\xd8 photo two", "menu.pdf": b"%PDF-1.4 menu"}
    prompt = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert all(name in prompt for name in saved) and "Caption: from the holiday" in prompt
    assert "The user sent a photo" in prompt and "The user sent a document" in prompt


@pytest.mark.parametrize(
    "error",
    [
        RpcError(-5, "Failed to send message due to rate limiting"),  # signal-cli RATELIMIT_ERROR
        # The daemon is up but cannot reach the Signal server: a user error with the send results as data.
        RpcError(
            -1,
            "Failed to send message",
            data={
                "response": {
                    "timestamp": 1,
                    "results": [{"recipientAddress": {"number": OWNER}, "type": "NETWORK_FAILURE"}],
                }
            },
        ),
    ],
    ids=["rate-limited", "network-failure"],
)
def test_a_reply_that_signal_could_not_send_for_now_is_retried_not_dropped(
    start, daemon, chat_server, workspace, error, monkeypatch
):
    # Tried again after 0.05 s, not the delivery loop's 0.5 s (conversation/item_turns.py): only that it is.
    monkeypatch.setattr(ItemTurns, "RETRY_FIRST_SECONDS", 0.05)
    chat_server.enqueue('{"reply": "the answer"}', '{"reply": "next"}')
    start(patch=busy_queue)  # each message its own turn (busy modes would join the second)
    daemon.send_errors.append(error)
    daemon.message(OWNER, "question")
    daemon.message(OWNER, "another")
    sent = daemon.wait_sent(2)
    assert [s["message"] for s in sent] == ["the answer", "next"]
    wait_for(lambda: not list(workspace.root.glob("state/inbox/pending/*/*.json")), what="empty inbox")


def test_a_reply_signal_keeps_refusing_is_logged_with_its_message_and_sent_once_after_a_restart(
    start, daemon, chat_server, workspace, caplog, monkeypatch
):
    """signal-cli refusing every send for now: after the delivery's tries the log names the message the reply
    answers and says it is kept; the next start sends it once from the ledger, the model asked once."""
    monkeypatch.setattr(ItemTurns, "RETRY_FIRST_SECONDS", 0.05)
    chat_server.enqueue('{"reply": "you will get this later"}')
    bot = start()
    daemon.send_errors.extend([RpcError(-5, "Failed to send message due to rate limiting")] * 1000)
    with caplog.at_level(logging.ERROR, logger="messaging_llm_bot"):
        daemon.message(OWNER, "important question")
        wait_for(lambda: any("not delivered" in r.getMessage() for r in caplog.records), what="the held reply")
    line = next(r.getMessage() for r in caplog.records if "not delivered" in r.getMessage())
    assert "important question" in line and "resent at the next start" in line
    bot.stop()
    assert [item.reply for item in Inbox(workspace).pending()] == ["you will get this later"]
    daemon.send_errors.clear()
    start()
    assert [sent["message"] for sent in daemon.wait_sent(1)] == ["you will get this later"]
    assert len(chat_server.chat_requests) == 1  # sent from the ledger: the model is not asked again
    wait_for(lambda: not Inbox(workspace).pending(), what="empty inbox")


def test_a_sticker_gets_the_sentence_for_what_the_bot_takes_and_reaches_no_model(start, daemon, chat_server):
    start()
    sticker = daemon.envelope(OWNER, None)
    sticker["envelope"]["dataMessage"]["sticker"] = {"packId": "a1b2", "stickerId": 3}
    daemon.deliver(sticker)
    [sent] = daemon.wait_sent(1)
    assert "can't handle a sticker message" in sent["message"] and "a document or a photo" in sent["message"]
    assert not chat_server.chat_requests


def test_a_hostile_file_name_is_never_repeated_and_its_file_lands_in_the_inbox(start, daemon, chat_server, workspace):
    """A name holding a path, a right-to-left override, an escape sequence, a NUL and 10,000 characters: the
    file is saved inside ``inbox/<date>/`` under a short safe name, and the sentence about a second file of that
    name over the size bound (to the sender alone, to the model beside the first) names it the same safe way
    (it repeated the name as sent, all 10,000 characters with their controls)."""
    hostile = "../../\u202eevil\x1b[31m\x00" + "x" * 10_000 + ".pdf"
    small = daemon.add_attachment(b"%PDF-1.4 small", "application/pdf", filename=hostile)
    big = daemon.add_attachment(b"%PDF-1.4 big", "application/pdf", filename=hostile)
    big["size"] = 150_000_000  # as signal-cli reports it: over the channel's 100 MB
    chat_server.enqueue('{"reply": "Got one of two."}')
    start()
    daemon.message(OWNER, attachments=[big])
    [refusal] = daemon.wait_sent(1)
    daemon.message(OWNER, "what is this?", attachments=[small, big])
    _, answered = daemon.wait_sent(2)
    assert answered["message"] == "Got one of two."
    prompt = chat_server.chat_requests[0]["messages"][-1]["content"]
    said = [refusal["message"], prompt.split("Another file could not be fetched: ")[1].split("\n")[0]]
    assert "150.0 MB" in said[0] and "150.0 MB" in said[1]
    for text in said:
        assert len(text) < 300 and not any(c in text for c in "\u202e\x1b\x00/"), text
    [saved] = [p for p in workspace.root.rglob("*") if p.is_file() and "evil" in p.name]
    assert saved.parent.parent == workspace.root / "inbox" and len(saved.name) <= 100
    assert saved.read_bytes() == b"%PDF-1.4 small"


@pytest.mark.parametrize("size", [pytest.param(2_000_100, id="just-over"), pytest.param(3_000_000, id="read-cut")])
def test_an_attachment_over_the_limit_without_a_size_is_refused(
    start, daemon, chat_server, workspace, size, monkeypatch
):
    """signal-cli may list an attachment without its size: the fetch then took any size (the whole base64 answer
    read, the file saved). Now a file over the limit is refused with the sentence of a cut download, nothing is
    saved and no model is asked; the answer is cut while read when it passes the base64 of the limit
    (``read-cut``), and a file a little over is refused once decoded (``just-over``)."""
    from messaging_llm_bot.channels.signal.turn import SignalTurns

    monkeypatch.setattr(SignalTurns, "MAX_FILE_BYTES", 2_000_000)  # Signal's 100 MB is too much for a test
    att = daemon.add_attachment(b"%PDF-1.4 " + b"x" * size, "application/pdf", filename="big.pdf")
    att["size"] = None
    start()
    daemon.message(OWNER, "what is this?", attachments=[att])
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "That file is larger than 2 MB, the most I take.", sent["message"]
    assert not [p for p in workspace.root.rglob("*") if p.is_file() and "big" in p.name]
    assert not chat_server.chat_requests


def test_an_attachment_without_a_size_is_read_from_signal_cli_no_further_than_the_limit(
    start, daemon, chat_server, workspace, monkeypatch
):
    """The Signal channel passes the limit's base64 to ``JsonRpcHttp.rpc(max_bytes=...)`` when it fetches a file
    listed without its size: of a 30 MB file's 40 MB answer the bot takes a few MB (what the sockets hold), hangs
    up, and the sender gets the refusal; without ``max_bytes`` at the call site the whole answer was read into the
    bot's memory before the same refusal."""
    from messaging_llm_bot.channels.signal.turn import SignalTurns

    monkeypatch.setattr(SignalTurns, "MAX_FILE_BYTES", 2_000_000)
    att = daemon.add_attachment(b"%PDF-1.4 " + b"x" * 30_000_000, "application/pdf", filename="huge.pdf")
    att["size"] = None
    start()
    daemon.message(OWNER, "what is this?", attachments=[att])
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "That file is larger than 2 MB, the most I take.", sent["message"]
    wait_for(lambda: daemon.large_answers and daemon.large_answers[0]["done"], what="the answer's end")
    [answer] = daemon.large_answers
    assert answer["bytes"] > 40_000_000 and answer["sent"] < answer["bytes"] / 2, answer
    assert not [p for p in workspace.root.rglob("*") if p.is_file() and "huge" in p.name]
    assert not chat_server.chat_requests
