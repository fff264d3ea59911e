"""The Signal frontend end to end: the real SignalService against FakeSignalDaemon and FakeChatServer."""

from __future__ import annotations

import contextlib
import json
import logging
import threading

import pytest

from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.conversation.commands import owner_only_text
from tests.fakes.signal_daemon import RpcError
from tests.signal_harness import BOT, FRIEND, GROUP, OWNER, STRANGER, RunningSignal, signal_config, styled, wait_for
from tests.telegram_harness import busy_queue, make_runtime, pairing_off


@pytest.mark.parametrize("wrap", ["plain", "jsonrpc"])
def test_conversation_with_a_skill_call(start, daemon, chat_server, workspace, wrap):
    daemon.wrap = wrap  # the HTTP form and the stdio/socket JSON-RPC notification form
    chat_server.enqueue('{"skill": "add", "args": {"a": 2, "b": 3}}', '{"reply": "The sum is **5**."}')
    start()
    event = daemon.message(OWNER, "what is 2 + 3?")
    [sent] = daemon.wait_sent(1)
    assert sent["recipient"] == [OWNER] and sent["message"] == "The sum is 5."
    assert styled(sent) == [("5", "BOLD")] and sent["styles_in_range"]
    assert "quoteTimestamp" not in sent  # direct chats are not quoted
    # The model saw the message, then the skill's result.
    assert chat_server.chat_requests[0]["messages"][-1]["content"].startswith("what is 2 + 3?")
    assert '{"sum": 5}' in chat_server.chat_requests[1]["messages"][-1]["content"]
    # Read receipt and typing indicator (started, then stopped).
    assert daemon.receipts[0]["targetTimestamp"] == [event["envelope"]["timestamp"]]
    wait_for(lambda: any(t["stop"] for t in daemon.typing), what="typing stop")
    assert daemon.typing[0] == {"recipient": [OWNER], "groupId": None, "stop": False}
    assert daemon.batches[0] == ["sendReceipt", "sendTyping"]  # one request for both
    # Answered: nothing left in the inbox; the conversation is sig:<number>.
    wait_for(lambda: not list(workspace.root.glob("state/inbox/pending/*/*.json")), what="the item completed")
    assert list(workspace.root.glob("conversations/sig_*15551110001*"))


def test_stranger_is_told_their_id_once_and_nothing_reaches_the_model(start, daemon, chat_server, workspace):
    start(patch=pairing_off)
    daemon.message(STRANGER, "hello?")
    [refusal] = daemon.wait_sent(1)
    assert refusal["recipient"] == [STRANGER]
    assert STRANGER in refusal["message"] and "00000000-0000-4000-8000-019990000000" in refusal["message"]
    daemon.message(STRANGER, "please answer")
    daemon.message(STRANGER, "/help")
    daemon.message(OWNER, "hi")  # processed after the stranger's messages (same stream)
    sent = daemon.wait_sent(2)
    assert [s["recipient"] for s in sent] == [[STRANGER], [OWNER]]
    assert len(chat_server.chat_requests) == 1  # only the owner's message
    assert "please answer" not in json.dumps(chat_server.chat_requests[0]["messages"])
    assert not list(workspace.root.glob("conversations/*19990000000*"))


def test_group_answers_mentions_only_and_quotes(start, daemon, chat_server):
    daemon.add_group(GROUP, "Family", [OWNER, FRIEND, BOT])
    chat_server.enqueue('{"reply": "Pizza it is."}')
    start()
    daemon.message(FRIEND, "what shall we eat tonight", group_id=GROUP)  # not addressed to the bot
    mention = {"name": BOT, "number": BOT, "uuid": daemon.account_uuid, "start": 0, "length": 1}
    asked = daemon.message(FRIEND, "\ufffc what shall we eat?", group_id=GROUP, mentions=[mention])
    [sent] = daemon.wait_sent(1)
    assert sent["groupId"] == GROUP and sent["recipient"] == [] and sent["message"] == "Pizza it is."
    assert sent["quoteTimestamp"] == asked["envelope"]["timestamp"]
    assert len(chat_server.chat_requests) == 1
    last = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert last.startswith("what shall we eat?") and "\ufffc" not in last
    # Someone who is not allowed, in the same group: quiet unless they address the bot.
    daemon.message(STRANGER, "hi all", group_id=GROUP)
    daemon.message(OWNER, "/help", group_id=GROUP)
    sent = daemon.wait_sent(2)
    assert sent[1]["groupId"] == GROUP and "/help" in sent[1]["message"]
    assert len(chat_server.chat_requests) == 1


def test_a_group_mention_of_the_bot_by_its_uuid_only_is_answered_and_one_of_someone_else_is_not(
    start, daemon, chat_server
):
    daemon.add_group(GROUP, "Family", [OWNER, FRIEND, BOT])
    chat_server.enqueue('{"reply": "Here."}')
    start()  # mention mode; the bot learns its UUID from signal-cli (getUserStatus for its own number)
    anna = {"name": "Anna", "number": None, "uuid": "b1111111-1111-4111-8111-111111111111", "start": 0, "length": 1}
    daemon.message(FRIEND, "\ufffc are you coming?", group_id=GROUP, mentions=[anna])
    hidden = {"name": "", "number": None, "uuid": daemon.account_uuid, "start": 0, "length": 1}  # number hidden
    daemon.message(FRIEND, "\ufffc are you there?", group_id=GROUP, mentions=[hidden])
    [sent] = daemon.wait_sent(1)
    assert sent["groupId"] == GROUP and sent["message"] == "Here."
    [request] = chat_server.chat_requests  # the mention of Anna, read first, reached no model
    asked = json.dumps(request["messages"])
    assert "are you there?" in asked and "are you coming" not in asked


def test_group_mode_all_answers_every_message(start, daemon, chat_server):
    daemon.add_group(GROUP, "Family", [OWNER, BOT])
    chat_server.enqueue('{"reply": "ok 1"}')
    start(group_mode="all")
    daemon.message(OWNER, "no mention here", group_id=GROUP)
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "ok 1" and sent["groupId"] == GROUP


def test_long_reply_is_split_below_the_signal_limit_on_paragraphs(start, daemon, chat_server):
    paragraphs = [f"Paragraph {i}: " + "Grüße aus Köln, schön ist es hier. " * 20 for i in range(8)]
    chat_server.enqueue(json.dumps({"reply": "\n\n".join(paragraphs)}))
    start()
    daemon.message(OWNER, "tell me a long story")
    wait_for(lambda: len(daemon.sent) >= 2, what="several parts")
    wait_for(lambda: "Paragraph 7" in daemon.sent[-1]["message"], what="the last part")
    parts = [s["message"] for s in daemon.sent]
    assert all(not s["long_text"] for s in daemon.sent)  # no part turned into a long-text attachment
    assert all(len(p.encode("utf-8")) <= 2000 for p in parts)
    assert all(p.startswith("Paragraph") for p in parts)  # every cut is at a paragraph start
    assert "\n\n".join(parts) == "\n\n".join(p.strip() for p in paragraphs)


def test_voice_note_is_transcribed(start, daemon, chat_server):
    def with_transcription(config):
        config["llm"]["transcription"] = {"base_url": chat_server.base_url, "model": "whisper-1"}

    chat_server.set_transcription("remind me to buy bread")
    chat_server.enqueue('{"reply": "Noted: bread."}')
    start(patch=with_transcription)
    att = daemon.add_attachment(b"\x00\x01fake-aac" * 50, "audio/aac")
    daemon.message(OWNER, None, attachments=[att])
    sent = daemon.wait_sent(2)
    assert sent[0]["message"] == "🎙 remind me to buy bread"
    assert sent[1]["message"].startswith("Noted: bread.")
    upload = [r for r in chat_server.requests if r.path.endswith("/audio/transcriptions")][0]
    assert upload["file_size"] == 500 and upload["file_content_type"] == "audio/aac"
    assert chat_server.chat_requests[0]["messages"][-1]["content"].startswith("remind me to buy bread")


@pytest.mark.parametrize(
    "content_type, filename, pattern, kind",
    [
        ("application/pdf", "../../invoice.pdf", "inbox/*/invoice.pdf", "document"),
        ("image/jpeg", None, "inbox/*/photo-*.jpg", "photo"),
    ],
)
def test_files_are_saved_into_the_workspace_as_untrusted(
    start, daemon, chat_server, workspace, content_type, filename, pattern, kind
):
    chat_server.enqueue('{"reply": "Saved your file."}')
    start()
    att = daemon.add_attachment(b"%PDF-1.4 invoice", content_type, filename=filename)
    daemon.message(OWNER, "my invoice", attachments=[att])
    daemon.wait_sent(1)
    [saved] = list(workspace.root.glob(pattern))  # the "../../" of a sender's file name is dropped
    assert saved.read_bytes() == b"%PDF-1.4 invoice"
    prompt = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert f"The user sent a {kind}" in prompt and "untrusted" in prompt and "Caption: my invoice" in prompt
    assert daemon.rpc[[r["method"] for r in daemon.rpc].index("getAttachment")]["params"]["recipient"] == OWNER


def test_the_reconnect_wait_doubles_up_to_its_bound_the_first_one_too() -> None:
    from messaging_llm_bot.conversation.outage import BACKOFF_START_SECONDS, Backoff

    backoff = Backoff(30.0)
    assert [backoff.next() for _ in range(8)] == [BACKOFF_START_SECONDS * 2**n for n in range(6)] + [30.0, 30.0]
    backoff.reset()
    assert backoff.next() == BACKOFF_START_SECONDS
    short = Backoff(0.1)  # a bound under the first wait (the tests' daemons): no wait is longer
    assert [short.next() for _ in range(3)] == [0.1, 0.1, 0.1]
    short.reset()
    assert short.next() == 0.1


def test_daemon_restart_mid_conversation(start, daemon, chat_server, caplog):
    caplog.set_level(logging.INFO, logger="messaging_llm_bot.channels.signal")
    gone = threading.Event()

    def answer(request: dict) -> str:  # the second reply is made once the daemon is gone
        content = request["messages"][-1]["content"]
        if content.startswith("second"):
            gone.wait(30)
            return '{"reply": "two"}'
        return '{"reply": "one"}' if content.startswith("first") else '{"reply": "three"}'

    chat_server.set_handler(answer)
    bot = start(backoff_max=0.1)
    bot.service.turns.RETRY_FIRST_SECONDS = 0.1  # the reply's next try once the daemon is back: soon
    daemon.message(OWNER, "first")
    daemon.wait_sent(1)
    daemon.message(OWNER, "second")  # its reply is ready while the daemon is gone
    wait_for(lambda: len(chat_server.chat_requests) == 2, what="the second turn")
    daemon.stop()
    gone.set()
    daemon.message(OWNER, "third")  # waits on the "server" until the bot subscribes again
    wait_for(lambda: "not reachable" in caplog.text, timeout=10, what="the outage log line")
    wait_for(lambda: bot.service.outage.failures >= 3, timeout=10, what="several reconnect attempts to fail")
    daemon.start()
    sent = daemon.wait_sent(3, timeout=15)
    assert [s["message"] for s in sent] == ["one", "two", "three"]
    outages = [r for r in caplog.records if "not reachable" in r.getMessage()]
    assert len(outages) == 1, [r.getMessage() for r in outages]  # logged once per outage, not per retry
    [back] = [r.getMessage() for r in caplog.records if "reachable again" in r.getMessage()]
    assert int(back.split("(after ")[1].split()[0]) >= 3, back  # the failed tries of the outage, counted


def test_daemon_down_at_start_is_retried_not_fatal(bot_config, daemon, workspace, tmp_path, chat_server, caplog):
    caplog.set_level(logging.INFO, logger="messaging_llm_bot.channels.signal")
    daemon.stop()
    chat_server.enqueue('{"reply": "hello late"}')
    runtime = make_runtime(signal_config(bot_config, daemon), workspace, tmp_path)
    bot = RunningSignal(runtime, backoff_max=0.1).start()  # tried again every 0.1 s: the tries are what is waited
    try:
        daemon.message(OWNER, "anyone there?")
        wait_for(lambda: bot.service.outage.failures >= 2, timeout=10, what="the connection to be tried again")
        assert bot.service.outage.down and bot.exit_code is None
        daemon.start()
        [sent] = daemon.wait_sent(1, timeout=15)
        assert sent["message"] == "hello late"
        assert len([r for r in caplog.records if "not reachable" in r.getMessage()]) == 1
    finally:
        assert bot.stop() == 0


def test_redelivered_message_is_answered_once(start, daemon, chat_server):
    chat_server.enqueue('{"reply": "once"}', '{"reply": "after"}')
    start()
    event = daemon.message(OWNER, "hello")
    daemon.wait_sent(1)
    daemon.deliver(event)  # the same sender + timestamp again
    daemon.message(OWNER, "next")
    sent = daemon.wait_sent(2)
    assert [s["message"] for s in sent] == ["once", "after"]
    assert len(chat_server.chat_requests) == 2


def test_per_chat_order_with_a_slow_first_turn(start, daemon, chat_server, workspace):
    def answer(request: dict) -> str:  # q1's answer comes once q2 is in the inbox: it arrived during q1's turn
        if request["messages"][-1]["content"].startswith("q1"):
            with contextlib.suppress(AssertionError):  # not taken: the order is still asserted below
                wait_for(lambda: len(list(workspace.root.glob("state/inbox/pending/*/*.json"))) == 2, 10, "q2")
            return '{"reply": "a1"}'
        return '{"reply": "a2"}'

    chat_server.set_handler(answer)
    start(patch=busy_queue)  # the queue's order (steer joins q2 to q1's turn: test_busy_modes.py)
    daemon.message(OWNER, "q1")
    daemon.message(OWNER, "q2")
    sent = daemon.wait_sent(2)
    assert [s["message"] for s in sent] == ["a1", "a2"]


def test_commands_use_the_shared_texts(start, daemon, chat_server, workspace):
    chat_server.enqueue('{"reply": "remembered"}')
    start()
    daemon.message(OWNER, "/help")
    daemon.message(OWNER, "/skills")
    daemon.message(OWNER, "/skill add")
    daemon.message(OWNER, "/frobnicate")
    daemon.message(OWNER, "remember this")
    daemon.message(OWNER, "/reset")
    daemon.message(OWNER, "/reset yes")
    daemon.message(FRIEND, "/now")
    daemon.message(FRIEND, "/stats")  # owner-only too, as on Telegram (assistant_framework.access)
    # The owner's answers come in order; /skills may take more than one message (a long skill list is split).
    wait_for(
        lambda: (
            len(daemon.sent_to(FRIEND)) == 2 and "/reset yes" in " ".join(s["message"] for s in daemon.sent_to(OWNER))
        ),
        what="the friend's answers and the /reset question",
    )
    wait_for(lambda: len(daemon.sent_to(OWNER)) >= 1 + _after_reset_question(daemon), what="the /reset yes answer")
    sent = [s["message"] for s in daemon.sent_to(OWNER)]
    assert "Commands:" in sent[0] and "/skills" in sent[0] and "**" not in sent[0]
    skill = next(i for i, m in enumerate(sent) if m.startswith("add") and "Test skill add." in m)
    assert "Add two integers" in "\n".join(sent[1:skill])  # the /skills list, in one message or more
    sent = sent[skill:]
    assert sent[1] == "Unknown command /frobnicate. /help lists what I understand."
    assert sent[2].startswith("remembered")
    assert "/reset yes" in sent[3]
    assert "clear" in sent[4].lower() or "forgot" in sent[4].lower() or "history" in sent[4].lower()
    assert [s["message"] for s in daemon.sent_to(FRIEND)] == [owner_only_text("now"), owner_only_text("stats")]
    assert len(chat_server.chat_requests) == 1  # commands never reach the model


def _after_reset_question(daemon) -> int:
    """How many messages the owner had once the /reset question was sent."""
    sent = [s["message"] for s in daemon.sent_to(OWNER)]
    return next(i for i, m in enumerate(sent) if "/reset yes" in m) + 1


def test_reminder_is_delivered_on_signal_only_for_signal_chats(start, daemon, workspace):
    from datetime import datetime, timedelta, timezone

    store = ReminderStore(workspace)
    due = datetime.now(timezone.utc) + timedelta(seconds=0.3)  # planned at the start, for a moment later
    mine = store.add(f"sig:{OWNER}", "water the plants", due, "Europe/Berlin")
    telegram_one = store.add(12345, "telegram's reminder", due, "Europe/Berlin")
    start()
    [sent] = daemon.wait_sent(1, timeout=10)
    assert sent["recipient"] == [OWNER] and sent["message"] == "⏰ water the plants"
    wait_for(lambda: not any(r["id"] == mine["id"] for r in store.pending()), what="delivered mark")
    assert any(r["id"] == telegram_one["id"] for r in store.pending())  # left for the Telegram frontend


def test_send_refused_by_the_daemon_is_logged_and_the_item_completed(start, daemon, chat_server, workspace):
    chat_server.enqueue('{"reply": "lost"}', '{"reply": "fine"}')
    start(patch=busy_queue)  # each message its own turn: the first reply is the one refused
    daemon.send_errors.append(RpcError(-1, f"The user {OWNER} is not registered."))
    daemon.message(OWNER, "first")
    daemon.message(OWNER, "second")
    [sent] = daemon.wait_sent(1)
    assert sent["message"] == "fine"
    wait_for(lambda: not list(workspace.root.glob("state/inbox/pending/*/*.json")), what="empty inbox")


def test_config_rejects_a_bad_signal_section(tmp_path):
    from assistant_framework.config import ConfigError, load_config

    (tmp_path / "signal.json").write_text(json.dumps({"enabled": True, "allowed": ["015112345"]}))
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path)
    text = str(err.value)
    assert "signal.json" in text and "allowed" in text and "account" in text


def _ask_writes(config):
    config["policy"] = {"capabilities": {"write": "ask"}}


SAVE = '{"skill": "save_note", "args": {"name": "groceries", "text": "bread"}}'


@pytest.mark.parametrize("answer, saved", [("yes", True), ("No.", False)])
def test_owner_confirms_by_replying(start, daemon, chat_server, workspace, answer, saved):
    chat_server.enqueue(SAVE, '{"reply": "Done."}')
    start(patch=_ask_writes)
    daemon.message(OWNER, "note groceries: bread")
    [question] = daemon.wait_sent(1)
    assert question["message"].startswith("Confirm this action?") and "save_note" in question["message"]
    assert not workspace.exists("notes/groceries.md")  # nothing happens before the answer
    daemon.message(OWNER, answer)  # answers the question; not a new message for the model
    sent = daemon.wait_sent(2)
    assert sent[1]["message"].startswith("Done.")
    assert workspace.exists("notes/groceries.md") is saved
    assert len(chat_server.chat_requests) == 2


def test_only_the_owner_is_asked(start, daemon, chat_server, workspace):
    chat_server.enqueue(SAVE, '{"reply": "I could not."}')
    start(patch=_ask_writes)
    daemon.message(FRIEND, "note groceries: bread")
    [sent] = daemon.wait_sent(1)
    assert sent["recipient"] == [FRIEND] and sent["message"].startswith("I could not.")
    assert not workspace.exists("notes/groceries.md")


def test_collector_notices_and_the_digest_go_to_the_owner(start, daemon, workspace):
    import asyncio
    from datetime import datetime, timedelta, timezone

    # An hour ago: "today or earlier" in Berlin at any time of day (two hours ahead was tomorrow after 22:00).
    # A Telegram chat's reminder: the Signal bot leaves it pending, and the digest lists it.
    earlier = datetime.now(timezone.utc) - timedelta(hours=1)
    ReminderStore(workspace).add(12345, "dentist appointment", earlier, "Europe/Berlin")
    bot = start()
    bot.service.notices.notify_from_thread("rss", "3 new items")
    [notice] = daemon.wait_sent(1)
    assert notice["recipient"] == [OWNER] and notice["message"] == "📬 rss: 3 new items"
    asyncio.run_coroutine_threadsafe(bot.service.notices.morning_digest(), bot.service._loop).result(10)
    [_, digest] = daemon.wait_sent(2)
    assert digest["recipient"] == [OWNER] and "dentist appointment" in digest["message"]


def test_stop_ends_the_answer_being_written_and_declines_an_open_question(start, daemon, chat_server, workspace):
    """/stop does not wait in the chat's queue: it stops the running turn (the streamed answer is cut
    off, the model server hung up on) and counts an open confirmation as declined."""
    words = " ".join(f"word{i}" for i in range(300))
    chat_server.enqueue({"content": json.dumps({"reply": words}), "chunk_delay": 0.02})
    start(patch=lambda config: (config["llm"].update(stream=True), _ask_writes(config)))
    daemon.message(OWNER, "tell me a long story")
    assert chat_server.wait_for_requests(1, timeout=10)  # the answer is streaming now (6 s in all)
    daemon.message(OWNER, "/stop")
    sent = daemon.wait_sent(2)
    assert sent[0]["message"] == "Stopping the answer I was writing."
    assert sent[1]["message"].endswith("⏹ Stopped.") and "word299" not in sent[1]["message"]
    wait_for(lambda: chat_server.streams_cut == 1, what="the server hung up on")

    chat_server.enqueue(SAVE)
    daemon.message(OWNER, "note groceries: bread")
    wait_for(
        lambda: any(s["message"].startswith("Confirm this action?") for s in daemon.sent_to(OWNER)), what="the question"
    )
    daemon.message(OWNER, "/stop")
    wait_for(lambda: sum("⏹ Stopped." in s["message"] for s in daemon.sent_to(OWNER)) == 2, what="the second stop")
    assert not workspace.exists("notes/groceries.md")
    daemon.message(OWNER, "/stop")
    wait_for(lambda: any("nothing to stop" in s["message"] for s in daemon.sent_to(OWNER)), what="nothing to stop")


def test_the_bots_stop_declines_an_open_question_at_once_and_the_turn_ends(start, daemon, chat_server, workspace):
    """The bot stopping while a turn waits for the owner's yes: no reply is read any more, so the question is
    declined at once and the turn ends within the stop (it waited out the stop's bound, then its thread the
    question's timeout past the bot's loop)."""

    def patch(config: dict) -> None:
        _ask_writes(config)
        config.setdefault("runtime", {})["shutdown_timeout_seconds"] = 60

    chat_server.enqueue(SAVE, '{"reply": "Not saved."}')
    bot = start(patch=patch)
    daemon.message(OWNER, "note groceries: bread")
    [question] = daemon.wait_sent(1)
    assert question["message"].startswith("Confirm this action?")
    assert bot.stop() == 0
    assert bot.service.shutdown.turns.pool.running == 0  # the turn's thread ended with the stop
    assert not workspace.exists("notes/groceries.md")
    assert "did not confirm" in chat_server.chat_requests[-1]["messages"][-1]["content"]


def test_stop_lets_the_turn_in_flight_finish(start, daemon, chat_server, workspace):
    """A graceful stop waits for the answer being written (runtime.shutdown_timeout_seconds); it is not
    cancelled midway, which would leave a sent reply in the inbox to be sent again at the next start."""
    running: list[RunningSignal] = []

    def answer(request: dict) -> str:  # the answer is written once the stop has begun
        with contextlib.suppress(AssertionError):  # not begun: the reply's fate is still asserted below
            wait_for(lambda: running and running[0].service.stopping, 10, "the stop")
        return '{"reply": "finished after the stop"}'

    chat_server.set_handler(answer)
    running.append(start())
    daemon.message(OWNER, "slow question")
    assert chat_server.wait_for_requests(1, timeout=10, path="/chat/completions")
    running[0].stop()
    assert [s["message"] for s in daemon.sent] == ["finished after the stop"]
    assert not workspace.list("state/inbox/pending/*/*")
