"""seen.log compaction (issue 34.10): past the kept count, the newest ids stay known, so a recent
message delivered again is answered once: at start-up (Telegram and Signal, through the real bots
across a restart) and while running (the Signal bot past twice the kept count)."""

from __future__ import annotations

import json

import assistant_framework.inbox.seen as seen_module
from assistant_framework.inbox import SEEN_KEEP, SEEN_LOG
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.signal_harness import wait_for
from tests.telegram_harness import OWNER

#: Older ids than anything the tests send, in the forms both frontends write.
OLD_LINES = [f"{i} {OWNER}/{i}/1600000000" for i in range(1, SEEN_KEEP + 500)]


def seen_ids(workspace) -> list[str]:
    return [line.split(" ")[0] for line in workspace.read_text(SEEN_LOG).splitlines()]


def pending(workspace) -> list[str]:
    return workspace.list("state/inbox/pending/*/*.json")


def asked(chat_server) -> list[str]:
    return [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests]


def test_telegram_recent_update_stays_known_after_compaction(fake, start_bot, chat_server, workspace):
    workspace.write_text(SEEN_LOG, "".join(f"{line}\n" for line in OLD_LINES))
    first = start_bot()  # compacts the old lines to the kept count
    recent = fake.send_message("only once please")  # update id 1: newer than every old line
    fake.wait_for_messages(OWNER, 1)
    fake.wait_for(lambda: not pending(workspace))  # answered and completed, not only sent
    first.stop()
    assert len(seen_ids(workspace)) == SEEN_KEEP + 1
    start_bot()  # compacts again: the oldest line goes, the newest stay
    assert len(seen_ids(workspace)) == SEEN_KEEP and seen_ids(workspace)[-1] == str(recent["update_id"])
    fake.redeliver(recent)  # Telegram sends it again (its confirmation was lost)
    fake.send_message("a new one")
    fake.wait_for_messages(OWNER, 2)
    fake.wait_for(lambda: fake.redelivered(recent["update_id"]))
    fake.wait_for(lambda: not pending(workspace))
    assert asked(chat_server) == ["only once please", "a new one"]
    assert len(fake.messages(OWNER)) == 2


def test_signal_recent_message_stays_known_after_compaction(start, daemon, chat_server, workspace):
    workspace.write_text(SEEN_LOG, "".join(f"sig:{line}\n" for line in OLD_LINES))
    first = start()
    event = daemon.message(SIGNAL_OWNER, "only once please")
    daemon.wait_sent(1)
    wait_for(lambda: not pending(workspace), what="the answer completed")
    first.stop()
    start()
    assert len(seen_ids(workspace)) == SEEN_KEEP
    daemon.deliver(json.loads(json.dumps(event)))  # the daemon delivers it again after the restart
    daemon.message(SIGNAL_OWNER, "a new one")
    daemon.wait_sent(2)
    wait_for(lambda: daemon.pending() == 0, what="both events read")
    assert asked(chat_server) == ["only once please", "a new one"]
    assert len(daemon.sent) == 2


def test_signal_seen_log_is_compacted_while_running_and_keeps_the_newest(
    start, daemon, chat_server, workspace, monkeypatch
):
    monkeypatch.setattr(seen_module, "SEEN_KEEP", 3)
    start()
    events = []
    for n in range(8):  # past twice the kept count: compacted once, while the bot runs
        events.append(daemon.message(SIGNAL_OWNER, f"message {n}"))
        daemon.wait_sent(n + 1)
    assert len(seen_ids(workspace)) < 8  # bounded: the file did not keep every id
    for event in events[-3:]:  # the newest ids are still known
        daemon.deliver(json.loads(json.dumps(event)))
    daemon.message(SIGNAL_OWNER, "the last one")
    daemon.wait_sent(9)
    wait_for(lambda: daemon.pending() == 0, what="every event read")
    assert asked(chat_server) == [f"message {n}" for n in range(8)] + ["the last one"]


def test_a_pending_messages_id_outlives_a_compaction_while_it_is_answered(
    start, daemon, chat_server, workspace, monkeypatch
):
    """The neighbour of the test above (found by the mutation audit): the owner's message is still being
    answered while a friend's messages push seen.log past twice the kept count; its id is kept (it is
    pending), so the daemon delivering it again does not answer it twice."""
    import threading

    from tests.crash_bot import echo_reply
    from tests.signal_harness import FRIEND

    monkeypatch.setattr(seen_module, "SEEN_KEEP", 3)
    release = threading.Event()

    def model(request):
        if request["messages"][-1]["content"].startswith("slow question"):
            release.wait(30)
            return '{"reply": "slow answer"}'
        return echo_reply(request)

    chat_server.set_handler(model)
    start()
    slow = daemon.message(SIGNAL_OWNER, "slow question")
    wait_for(lambda: asked(chat_server) == ["slow question"], what="the owner's turn to start")
    for n in range(8):  # the friend's chat runs meanwhile: seen.log is compacted while the owner's item waits
        daemon.message(FRIEND, f"message {n}")
        wait_for(lambda n=n: len(daemon.sent_to(FRIEND)) == n + 1, what=f"the friend's message {n}")
    assert len(seen_ids(workspace)) < 9  # compacted while the owner's message was still pending
    daemon.deliver(json.loads(json.dumps(slow)))  # delivered again while it is still being answered
    wait_for(lambda: daemon.pending() == 0, what="the event read")
    release.set()
    # The slow answer first: sent while that turn still runs (a loaded machine), the next message joins it.
    wait_for(lambda: len(daemon.sent_to(SIGNAL_OWNER)) == 1, what="the owner's slow answer")
    daemon.message(SIGNAL_OWNER, "the last one")
    wait_for(lambda: len(daemon.sent_to(SIGNAL_OWNER)) == 2, what="the owner's two answers")
    wait_for(lambda: not pending(workspace), what="every item completed")
    assert [s["message"] for s in daemon.sent_to(SIGNAL_OWNER)] == ["slow answer", "re: the last one"]
    assert asked(chat_server).count("slow question") == 1
