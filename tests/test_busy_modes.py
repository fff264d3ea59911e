"""Busy modes (issue 45): a message the same person sends while the model works on their last one.

steer (the default): it is in the next model request of the same turn, one reply answers both, no second
turn runs; queue: two turns in order; interrupt: the request in flight is hung up and one turn answers both.
A SIGKILL after the joined message was in a request but before the reply went out: after the restart both
messages are answered, each once. The Telegram bot against the fake Bot API and the fake model server."""

from __future__ import annotations

import json
import threading

import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from tests.crash_bot import BotProcess, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.held_model import HeldModel, user_texts
from tests.telegram_harness import OWNER, texts

CHAT = f"tg:{OWNER}"


def joined(bot, count: int = 1) -> bool:
    return bot.service.turns.busy.joined(CHAT) >= count


def test_steer_adds_the_second_message_to_the_running_turn_and_one_reply_answers_both(
    fake, start_bot, chat_server, workspace
):
    model = HeldModel(chat_server)
    bot = start_bot()
    fake.send_message("first: book the table for Anna")
    assert chat_server.wait_for_requests(1, timeout=10)
    fake.send_message("no, the other Anna")
    fake.wait_for(lambda: joined(bot), timeout=10)
    model.release.set()
    fake.wait_for(lambda: any(t.startswith("answer to:") for t in texts(fake)), timeout=10)
    requests = chat_server.chat_requests
    assert len(requests) == 2  # the first answer was not sent: the turn went on with the new message
    assert user_texts(requests[1])[-1] == "no, the other Anna" and "first: book" in user_texts(requests[1])[0]
    assert texts(fake) == ["answer to: first: book the table for Anna + no, the other Anna"]
    fake.wait_for(lambda: Inbox(workspace).pending() == [], timeout=10)  # both answered, no second turn
    assert len(chat_server.chat_requests) == 2
    traces = lambda: list((workspace.root / "traces").glob("*/*.json"))  # noqa: E731 - written in the background
    fake.wait_for(lambda: len(traces()) == 1, timeout=10)
    trace = json.loads(traces()[0].read_text(encoding="utf-8"))
    assert [(s["round"], s["text"]) for s in trace["steered"]] == [(2, "no, the other Anna")]


def test_queue_answers_the_second_message_in_a_turn_of_its_own(fake, start_bot, chat_server, workspace):
    model = HeldModel(chat_server)
    bot = start_bot()
    fake.send_message("/busy queue")
    fake.wait_for(lambda: any("Busy mode here: queue" in t for t in texts(fake)), timeout=10)
    fake.send_message("first question")
    assert chat_server.wait_for_requests(1, timeout=10)
    fake.send_message("second question")
    # Stored, not joined, queued behind the first (conversation/intake.py decides before it queues): the chat's
    # queue holds both, where waiting for two more polls took a long poll's 0.5 s.
    fake.wait_for(lambda: bot.service.queues.pending(OWNER) == 2, timeout=10)
    assert not joined(bot)
    model.release.set()
    fake.wait_for(lambda: len(texts(fake)) == 3, timeout=10)
    assert texts(fake)[1:] == ["answer to the first only", "answer to: second question"]
    assert [user_texts(r)[-1].split("\n")[0] for r in chat_server.chat_requests] == [
        "first question",
        "second question",
    ]


def test_interrupt_hangs_up_the_request_in_flight_and_one_turn_answers_both(fake, start_bot, chat_server, workspace):
    model = HeldModel(chat_server)
    start_bot()
    fake.send_message("/busy interrupt")
    fake.wait_for(lambda: any("Busy mode here: interrupt" in t for t in texts(fake)), timeout=10)
    fake.send_message("first: a long story please")
    assert chat_server.wait_for_requests(1, timeout=10)
    fake.send_message("make it short")
    fake.wait_for(lambda: any(t.startswith("answer to:") for t in texts(fake)), timeout=10)  # not released
    assert texts(fake)[1:] == ["answer to: first: a long story please + make it short"]
    assert len(chat_server.chat_requests) == 2
    model.release.set()
    fake.wait_for(lambda: Inbox(workspace).pending() == [], timeout=10)


def test_another_persons_message_in_the_chat_is_never_merged(fake, start_bot, chat_server, workspace):
    model = HeldModel(chat_server)
    bot = start_bot(allowed_user_ids=[OWNER, 5])
    fake.send_message("first question")
    assert chat_server.wait_for_requests(1, timeout=10)
    fake.send_message("a friend's question", user_id=5)  # their own chat: its own turn at once
    fake.wait_for(lambda: texts(fake, 5) == ["answer to: a friend's question"], timeout=10)
    assert not joined(bot)
    model.release.set()
    fake.wait_for(lambda: texts(fake) == ["answer to the first only"], timeout=10)


@pytest.mark.timeout(90)
def test_a_sigkill_after_the_joined_message_was_asked_answers_both_once_after_restart(tmp_path, bot_config):
    asked, release = threading.Event(), threading.Event()

    def model_answer(request: dict) -> str | dict:
        turn = user_texts(request)
        if len(turn) == 1 and "first" in turn[0] and not asked.is_set():
            release.wait(20)  # until the second message has joined the turn
            return json.dumps({"reply": "answer to the first only"})
        if len(turn) == 2 and not asked.is_set():
            asked.set()  # both in one request: the bot is killed before this answer comes
            return {"content": json.dumps({"reply": "never delivered"}), "delay": 30}
        return json.dumps({"reply": "re: " + " + ".join(t.split("\n")[0] for t in turn)})

    with FakeBotAPI() as fake, FakeChatServer() as model:
        model.set_handler(model_answer)
        base = dict(
            bot_config,
            llm={**bot_config["llm"], "runners": [{"name": "fake", "base_url": model.base_url, "model": "m"}]},
        )
        config = write_bot_config(tmp_path / "config.json", base, fake)
        workspace = tmp_path / "workspace"
        with BotProcess(config, workspace, tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            fake.send_message("first message")
            assert model.wait_for_requests(1, timeout=20)
            fake.send_message("second message")
            fake.wait_for(lambda: "joined the turn running" in bot.run_log(), timeout=20)
            release.set()
            assert asked.wait(20), bot.run_log()[-2000:]
            bot.kill()
            assert sent_texts(fake, OWNER) == []
            bot.start().wait_ready()
            fake.wait_for(lambda: len(sent_texts(fake, OWNER)) >= 2, timeout=30)
            assert bot.terminate() == 0
        assert sent_texts(fake, OWNER) == ["re: first message", "re: second message"]
        assert Inbox(Workspace(workspace)).pending() == []
        assert "Traceback" not in bot.log_text()


def test_a_reply_recorded_for_a_joined_message_is_resent_once_and_completes_both(
    fake, start_bot, chat_server, workspace
):
    """The crash after the reply that answers both was recorded: the next start sends it once and asks nothing."""
    first = fake.send_message("first message")
    second = fake.send_message("second message")
    inbox = Inbox(workspace)
    items = []
    for update in (first, second):
        message = update["message"]
        fingerprint = f"{message['chat']['id']}/{message['message_id']}/{message['date']}"
        items.append(inbox.accept(str(update["update_id"]), CHAT, update, fingerprint))
    inbox.record_reply(items[0].item_id, "one answer to both", [items[1].item_id])
    start_bot()
    fake.wait_for(lambda: texts(fake) == ["one answer to both"], timeout=10)
    fake.wait_for(lambda: Inbox(workspace).pending() == [], timeout=10)
    assert chat_server.chat_requests == [] and texts(fake) == ["one answer to both"]


def test_messages_in_a_group_are_never_merged(fake, start_bot, chat_server, workspace):
    """A group: each message is its own turn, in order, even from the one person writing (guests' turns)."""
    model = HeldModel(chat_server)
    start_bot(group_mode="all", allowed_user_ids=[OWNER, 5])
    group = {"chat_id": -100500, "chat_type": "supergroup"}
    fake.send_message("first question", user_id=5, **group)
    assert chat_server.wait_for_requests(1, timeout=10)
    polls = fake.polls_started()
    fake.send_message("second question", user_id=5, **group)
    fake.wait_for(lambda: fake.polls_started() >= polls + 2, timeout=10)  # fetched: queued, or joined if wrong
    model.release.set()
    fake.wait_for(lambda: len(fake.messages(-100500)) == 2, timeout=10)
    assert [m["text"] for m in fake.messages(-100500)] == ["answer to the first only", "answer to: second question"]


def test_signal_steer_adds_the_second_message_and_one_reply_answers_both(daemon, start, chat_server, workspace):
    from tests.signal_harness import OWNER as SIGNAL_OWNER
    from tests.signal_harness import wait_for

    model = HeldModel(chat_server)
    bot = start()
    daemon.message(SIGNAL_OWNER, "first: book the table for Anna")
    assert chat_server.wait_for_requests(1, timeout=10)
    daemon.message(SIGNAL_OWNER, "no, the other Anna")
    wait_for(lambda: bot.service.turns.busy.joined(f"sig:{SIGNAL_OWNER}") == 1, what="the message to join")
    model.release.set()
    wait_for(lambda: daemon.sent_to(SIGNAL_OWNER), what="the reply")
    wait_for(lambda: Inbox(workspace).pending() == [], what="both messages answered")
    assert [s["message"] for s in daemon.sent_to(SIGNAL_OWNER)] == [
        "answer to: first: book the table for Anna + no, the other Anna"
    ]
    assert len(chat_server.chat_requests) == 2


def test_a_failed_turn_answers_none_of_the_messages_that_joined_it_and_a_replay_skips_only_recorded_ones(tmp_path):
    """The shared pieces every channel's turn uses (conversation/busy.py): a turn whose reply is an apology
    (it raised) answers none of the messages offered to it, so each gets a turn of its own; one that ends well
    answers those that entered and leaves those offered too late. At start, only messages a recorded reply
    names are completed with it; a reply not yet recorded answers nothing."""
    from messaging_llm_bot.agent.steering import Steered
    from messaging_llm_bot.conversation.busy import RunningTurn, answered_by_recorded

    turn = RunningTurn("owner", [("entered", Steered("no, the other Anna", taken=True)), ("late", Steered("also"))])
    assert turn.outcome(failed=False) == (["entered"], ["late"])
    assert turn.outcome(failed=True) == ([], ["entered", "late"])

    inbox = Inbox(Workspace(tmp_path))
    first, second, third = (inbox.accept(f"m{n}", CHAT, {"text": f"message {n}"}) for n in range(3))
    assert first is not None and second is not None and third is not None
    assert answered_by_recorded(inbox.pending()) == set()
    inbox.record_reply(first.item_id, "one answer to both", [second.item_id])
    assert answered_by_recorded(Inbox(Workspace(tmp_path)).pending()) == {second.item_id}  # read back from disk
