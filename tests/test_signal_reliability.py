"""Reliability guarantees of the Telegram tests, on Signal (issue 34.12: the neighbouring frontend). Items a
crash left are answered at start, resuming after the parts already sent; a damaged item file is moved
aside and the rest answered; a ``seen.log`` with bad bytes keeps its readable ids; a turn longer than
the shutdown bound stays in the inbox and is answered at the next start; a model fault or a model
server that is down gives one specific sentence and the next message works. The real SignalService
against the fake signal-cli daemon and a scripted model server."""

from __future__ import annotations

import json
import logging

from assistant_framework.inbox import Inbox
from messaging_llm_bot.channels.signal.settings import parse_event
from tests.crash_bot import echo_reply
from tests.fakes.chat_server import FakeChatServer
from tests.signal_harness import OWNER, wait_for
from tests.test_reliability_disk import small_disk  # noqa: F401 - the fixture


def _accept(inbox: Inbox, daemon, text: str):
    """Store a message from the owner in the inbox as the Signal bot does (a crash then left it there)."""
    event = daemon.envelope(OWNER, text)
    msg = parse_event(event)
    return inbox.accept(msg.source_id, msg.conversation_id, event)


def test_crash_left_items_are_answered_at_start_resuming_after_sent_parts(start, daemon, chat_server, workspace):
    inbox = Inbox(workspace)
    long_reply = "\n\n".join(f"Section {i} " + "lorem ipsum " * 50 for i in range(12))  # about 7,500 characters
    a = _accept(inbox, daemon, "question A")
    inbox.record_reply(a.item_id, long_reply)
    inbox.record_part(a.item_id, 0, 4242)  # part 1 went out before the crash
    _accept(inbox, daemon, "question B")
    chat_server.enqueue('{"reply": "answer B"}')
    start()
    wait_for(lambda: any(s["message"] == "answer B" for s in daemon.sent), timeout=15, what="answer B")
    sent = [s["message"] for s in daemon.sent]
    assert sent[0].startswith("Section") and not sent[0].startswith("Section 0 "), sent[0][:40]  # part 2 first
    assert not any("Section 0 " in part for part in sent) and "Section 11 " in sent[-2]  # the rest, to the end
    assert [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests] == ["question B"]
    wait_for(lambda: not Inbox(workspace).pending(), what="the inbox emptied")


def test_a_damaged_item_file_is_moved_aside_and_the_rest_is_answered(start, daemon, chat_server, workspace, caplog):
    caplog.set_level(logging.WARNING)
    inbox = Inbox(workspace)
    good = _accept(inbox, daemon, "still here")
    folder = workspace.path(f"state/inbox/pending/{good.item_id}.json").parent
    (folder / "00000000000000000001.json").write_text("{not json")  # torn by a crash
    chat_server.enqueue('{"reply": "answered"}')
    start()
    [sent] = daemon.wait_sent(1, timeout=15)
    assert sent["message"] == "answered"
    assert len(list(folder.glob("00000000000000000001.json.broken-*"))) == 1
    assert not (folder / "00000000000000000001.json").exists()
    warned = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(warned) == 1 and "moved aside" in warned[0]


def test_a_seen_log_with_bad_bytes_keeps_its_readable_ids(start, daemon, chat_server, workspace, caplog):
    caplog.set_level(logging.WARNING)
    answered = daemon.envelope(OWNER, "answered before the damage")
    source_id = parse_event(answered).source_id
    workspace.path("state/inbox").mkdir(parents=True, exist_ok=True)
    workspace.path("state/inbox/seen.log").write_bytes(f"{source_id}\n\xff\xfe garbage\n".encode("latin-1"))
    chat_server.set_handler(echo_reply)
    start()
    daemon.deliver(answered)  # delivered again: still known, not answered twice
    daemon.message(OWNER, "a new message")  # the same chat: answered after the re-delivery was handled
    wait_for(lambda: any(s["message"] == "re: a new message" for s in daemon.sent), what="the new message answered")
    assert [s["message"] for s in daemon.sent] == ["re: a new message"]
    assert len(chat_server.chat_requests) == 1
    assert len(workspace.list("state/inbox/seen.log.broken-*")) == 1
    assert [r for r in caplog.records if "seen.log" in r.getMessage()]


def test_a_turn_longer_than_the_bound_stays_in_the_inbox_and_is_answered_next_start(
    start, daemon, chat_server, workspace
):
    def bound(config):  # the bound is what is waited out: small, as nothing races it (the answer comes 20 s later)
        config["runtime"]["shutdown_timeout_seconds"] = 0.3
        config["llm"]["runners"][0]["timeout_seconds"] = 30

    chat_server.enqueue({"content": json.dumps({"reply": "too late"}), "delay": 20})
    bot = start(patch=bound)
    daemon.message(OWNER, "very slow question")
    assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
    assert bot.stop(timeout=20) == 0
    assert daemon.sent == []
    [pending] = Inbox(workspace).pending()
    assert parse_event(pending.payload).text == "very slow question"
    chat_server.reset()
    chat_server.enqueue('{"reply": "answered now"}')
    start(patch=bound)
    [sent] = daemon.wait_sent(1, timeout=15)
    assert sent["message"] == "answered now"
    wait_for(lambda: not Inbox(workspace).pending(), what="the inbox emptied")


def test_a_model_fault_gives_one_specific_sentence_and_the_next_message_works(start, daemon, chat_server):
    start()
    faults = [({"status": 500}, "internal error"), ({"raw": "this is {not json"}, "could not be read")]
    for n, (fault, words) in enumerate(faults, 1):
        chat_server.reset()
        chat_server.enqueue(*[fault] * 3)  # enough for any retry the client makes
        daemon.message(OWNER, f"question {n}")
        reply = daemon.wait_sent(2 * n - 1, timeout=20)[-1]["message"]
        assert words in reply and "model server" in reply.lower() and "Traceback" not in reply, reply
        chat_server.reset()
        chat_server.enqueue('{"reply": "fine now"}')
        daemon.message(OWNER, "and now?")
        assert daemon.wait_sent(2 * n, timeout=20)[-1]["message"] == "fine now"


def test_a_model_server_that_is_down_is_named_in_one_sentence(start, daemon):
    dead = FakeChatServer().start()
    url = dead.base_url
    dead.stop()  # nothing listens on that port any more
    start(patch=lambda config: config["llm"]["runners"][0].update(base_url=url))
    daemon.message(OWNER, "anyone there?")
    [reply] = daemon.wait_sent(1, timeout=20)
    assert "not reachable" in reply["message"] and url in reply["message"], reply


def test_disk_full_is_told_in_one_sentence_and_the_next_message_works(
    request, daemon, bot_config, tmp_path, chat_server, caplog, monkeypatch
):
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.conversation import held
    from tests.signal_harness import RunningSignal, signal_config
    from tests.telegram_harness import make_runtime
    from tests.test_reliability_disk import assert_no_torn_files, fill

    monkeypatch.setattr(held, "RETRY_FIRST_SECONDS", 0.1)
    monkeypatch.setattr(held, "RETRY_MAX_SECONDS", 0.3)
    disk = request.getfixturevalue("small_disk")  # a 2 MB tmpfs (skipped without permission to mount)
    workspace = Workspace(disk / "ws")
    chat_server.set_handler(echo_reply)
    with RunningSignal(make_runtime(signal_config(bot_config, daemon), workspace, tmp_path)):
        daemon.wait_connected()
        daemon.message(OWNER, "first")
        assert daemon.wait_sent(1, timeout=15)[0]["message"] == "re: first"
        wait_for(lambda: not Inbox(workspace).pending(), what="the first turn done")
        filler = disk / "filler"
        with caplog.at_level(logging.ERROR):
            fill(filler)
            daemon.message(OWNER, "while full")
            full = daemon.wait_sent(2, timeout=15)[1]["message"]
            # One sentence naming the cause; the message is held, not lost, and no model call is made.
            assert "cannot save messages right now" in full and "disk" in full and "Traceback" not in full, full
            assert any("the inbox cannot store messages" in r.getMessage() for r in caplog.records)
        assert [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests] == ["first"]
        filler.unlink()
        # Space is back: the held message is answered once, then the next one.
        assert daemon.wait_sent(3, timeout=15)[2]["message"] == "re: while full"
        daemon.message(OWNER, "after")
        assert daemon.wait_sent(4, timeout=15)[3]["message"] == "re: after"
        wait_for(lambda: not Inbox(workspace).pending(), what="the last turn done")
    asked = [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests]
    assert asked == ["first", "while full", "after"]
    assert_no_torn_files(workspace.root)
    assert Inbox(workspace).pending() == []
