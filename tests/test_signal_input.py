"""The Signal frontend with unusual input: the real SignalService against FakeSignalDaemon and FakeChatServer."""

from __future__ import annotations

import pytest

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


def test_a_sticker_gets_the_sentence_for_what_the_bot_takes_and_reaches_no_model(start, daemon, chat_server):
    start()
    sticker = daemon.envelope(OWNER, None)
    sticker["envelope"]["dataMessage"]["sticker"] = {"packId": "a1b2", "stickerId": 3}
    daemon.deliver(sticker)
    [sent] = daemon.wait_sent(1)
    assert "can't handle a sticker message" in sent["message"] and "a document or a photo" in sent["message"]
    assert not chat_server.chat_requests
