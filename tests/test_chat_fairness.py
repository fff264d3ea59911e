"""One chat cannot starve the others (issue 26.9). An allowed friend floods the bot while the model
holds their answers: the owner's message is answered at once, before the friend's backlog drains; the
friend's chat holds at most ``runtime.max_pending_per_chat`` (20) messages, answered in order, the
rest are not answered (and leave the inbox), and the friend is told once. Real bots (PTB against the
fake Bot API, the Signal frontend against the fake daemon), the fake model server."""

from __future__ import annotations

import threading

from assistant_framework.config.settings import RuntimeSettings
from tests.signal_harness import FRIEND as SIGNAL_FRIEND
from tests.signal_harness import GROUP, wait_for
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.telegram_harness import OWNER, busy_queue

FRIEND = 42
NOTICE = "skipping new ones"

DEFAULT_MAX_PENDING = RuntimeSettings().max_pending_per_chat  # 20, as config/README.md says


def held_friend(chat_server) -> threading.Event:
    """The model answers the owner at once and holds every friend's answer until the event is set."""
    release = threading.Event()

    def answer(request: dict) -> str:
        if request["messages"][-1]["content"].startswith("flood"):
            release.wait(30)
            return '{"reply": "friend answered"}'
        return '{"reply": "owner answered"}'

    chat_server.set_handler(answer)
    return release


def stored(workspace) -> list[str]:
    """The texts of the messages waiting in the inbox."""
    items = [workspace.read_json(rel, default=None) or {} for rel in pending(workspace)]  # one may go meanwhile
    return [str(((item.get("payload") or {}).get("message") or {}).get("text")) for item in items]


def asked(chat_server) -> list[str]:
    return [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests]


def pending(workspace) -> list[str]:
    return workspace.list("state/inbox/pending/*/*.json")


def test_telegram_friend_flood_does_not_hold_back_the_owner(fake, start_bot, chat_server, workspace):
    release = held_friend(chat_server)
    start_bot(config_patch=busy_queue, allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER)
    for n in range(300):  # more than PTB's 256 places for updates in progress
        fake.send_message(f"flood {n}", user_id=FRIEND)
    try:
        assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")  # the friend's first, held
        fake.send_message("hello, it's me", user_id=OWNER)
        assert fake.wait_for_messages(OWNER, 1, timeout=15)[0]["text"] == "owner answered"
        assert len([m for m in fake.messages(FRIEND) if m["text"] == "friend answered"]) == 0  # backlog untouched
    finally:
        release.set()
    fake.wait_for(
        lambda: len([m for m in fake.messages(FRIEND) if m["text"] == "friend answered"]) == DEFAULT_MAX_PENDING,
        timeout=60,
    )
    fake.wait_for(lambda: not pending(workspace), timeout=30)  # the skipped ones left the inbox too
    flood = [a for a in asked(chat_server) if a.startswith("flood")]
    assert flood == [f"flood {n}" for n in range(DEFAULT_MAX_PENDING)]  # the first 20, in order
    notices = [m["text"] for m in fake.messages(FRIEND) if NOTICE in m["text"]]
    assert len(notices) == 1 and f"{DEFAULT_MAX_PENDING} of your messages" in notices[0]
    # Caught up: the friend is answered again.
    fake.send_message("flood again", user_id=FRIEND)
    fake.wait_for(lambda: "flood again" in asked(chat_server), timeout=15)


def test_signal_friend_flood_in_a_group_does_not_hold_back_the_owner(start, daemon, chat_server, workspace):
    daemon.add_group(GROUP, "Friends", [SIGNAL_OWNER, SIGNAL_FRIEND])
    release = held_friend(chat_server)
    start(group_mode="all")
    for n in range(40):
        daemon.message(SIGNAL_FRIEND, f"flood {n}", group_id=GROUP)
    try:
        assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
        daemon.message(SIGNAL_OWNER, "hello, it's me")
        wait_for(lambda: daemon.sent_to(SIGNAL_OWNER), what="the owner's answer")
        assert daemon.sent_to(SIGNAL_OWNER)[0]["message"] == "owner answered"
        # The owner's own message in the flooded group is never skipped (it waits its turn there).
        daemon.message(SIGNAL_OWNER, "flood from the owner", group_id=GROUP)
        # Every event read and stored (or left out) before the friend is let go: the friend's 20 and the owner's.
        wait_for(lambda: len(pending(workspace)) == DEFAULT_MAX_PENDING + 1, what="the owner's message stored")
    finally:
        release.set()
    group = lambda: [s["message"] for s in daemon.sent_to(GROUP)]  # noqa: E731
    wait_for(lambda: group().count("friend answered") == DEFAULT_MAX_PENDING + 1, timeout=60, what="the backlog")
    wait_for(lambda: not pending(workspace), what="an empty inbox")
    flood = [a for a in asked(chat_server) if a.startswith("flood")]
    assert flood == [f"flood {n}" for n in range(DEFAULT_MAX_PENDING)] + ["flood from the owner"]
    assert len([t for t in group() if NOTICE in t]) == 1


def _group_bound(config: dict) -> None:
    """A bound of 8 for the group's chat: its 8 replies, the owner's and the notice stay within Telegram's 20
    messages a minute to a group, which the default's 21 replies and notice waited out twice (3 s each)."""
    config["runtime"]["max_pending_per_chat"] = GROUP_BOUND


GROUP_BOUND = 8


def test_telegram_owner_message_in_a_flooded_group_is_never_skipped(fake, start_bot, chat_server, workspace):
    release = held_friend(chat_server)
    start_bot(config_patch=_group_bound, allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, group_mode="all")
    group = {"chat_id": -100777, "chat_type": "group"}
    for n in range(30):
        fake.send_message(f"flood {n}", user_id=FRIEND, **group)
    fake.send_message("flood from the owner", user_id=OWNER, **group)
    try:
        # The owner's message stored (so every earlier one was), and the other 22 left out of the inbox.
        fake.wait_for(lambda: "flood from the owner" in stored(workspace), timeout=15)
        fake.wait_for(lambda: len(pending(workspace)) == GROUP_BOUND + 1, timeout=15)
    finally:
        release.set()
    fake.wait_for(lambda: not pending(workspace), timeout=60)
    flood = [a for a in asked(chat_server) if a.startswith("flood")]
    assert flood == [f"flood {n}" for n in range(GROUP_BOUND)] + ["flood from the owner"]
    assert len([m for m in fake.messages(-100777) if NOTICE in m["text"]]) == 1
