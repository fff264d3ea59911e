"""Signal identity (issue 26.10): the account UUID is who sent a message, the number only a claim. A
message carrying the owner's (or a friend's) number from another account is refused and logged,
in a direct chat and in a group, also after a restart; the owner's own account is still served,
with its number hidden too. Real SignalService against the fake signal-cli daemon."""

from __future__ import annotations

import json
import logging

from messaging_llm_bot.channels.signal.identity import IDENTITIES
from tests.signal_harness import BOT, FRIEND, GROUP, OWNER, wait_for
from tests.telegram_harness import pairing_off

OWNER_SECRET = "owner-secret-code-4711"
OWNER_ACCOUNT = "00000000-0000-4000-8000-015551110001"  # the fake daemon's UUID for OWNER
FRIEND_ACCOUNT = "00000000-0000-4000-8000-015551110002"
IMPOSTOR = "bad0bad0-0000-4000-8000-000000000666"


def owner_data(workspace) -> None:
    from assistant_framework.stores.tasks import TaskStore

    TaskStore(workspace).add(f"pay the {OWNER_SECRET} invoice", due="2020-01-01")
    workspace.write_text("context/me.md", f"The owner's PIN is {OWNER_SECRET}.\n")


def test_owner_number_from_another_account_is_refused_and_logged(start, daemon, chat_server, workspace, caplog):
    owner_data(workspace)
    daemon.add_group(GROUP, "Family", [OWNER, FRIEND, BOT])
    bot = start(group_mode="all")
    daemon.message(OWNER, "/now")  # the owner's first message pins the number to its account
    assert OWNER_SECRET in daemon.wait_sent(1)[0]["message"]
    assert json.loads(workspace.read_text(IDENTITIES)) == {OWNER: OWNER_ACCOUNT}

    daemon.message(FRIEND, "hello")  # the friend's own account: served, and pinned
    daemon.wait_sent(2)
    caplog.set_level(logging.INFO, logger="messaging_llm_bot.channels.signal")
    daemon.message(OWNER, "/now", uuid=IMPOSTOR)
    daemon.message(OWNER, "what is my PIN?", uuid=IMPOSTOR)
    daemon.message(OWNER, "/now", uuid=IMPOSTOR, group_id=GROUP)
    daemon.message(FRIEND, "what did the owner say?", uuid=IMPOSTOR)
    daemon.message(OWNER, "what did I say?", uuid=FRIEND_ACCOUNT)  # an allowed account with the owner's number
    no_account = daemon.envelope(OWNER, "what is my PIN?")  # the owner's pinned number, no account given
    no_account["envelope"]["sourceUuid"] = None
    daemon.deliver(no_account)
    daemon.message(OWNER, "/now")  # the owner's own account is still served, after everything above
    wait_for(lambda: len(daemon.sent_to(OWNER)) == 2, what="the owner's second /now")
    assert OWNER_SECRET in daemon.sent_to(OWNER)[1]["message"]
    assert len(daemon.sent) == 3 and len(daemon.sent_to(FRIEND)) == 1  # the impostor got no answer at all
    assert len(chat_server.chat_requests) == 1  # only the friend's own "hello"
    assert "PIN" not in json.dumps(chat_server.chat_requests[0]["messages"][-1])
    refusals = [r.getMessage() for r in caplog.records if "comes from account" in r.getMessage()]
    assert any(OWNER in line and IMPOSTOR in line and OWNER_ACCOUNT in line for line in refusals)
    assert any(FRIEND in line and IMPOSTOR in line for line in refusals)
    assert any(OWNER in line and FRIEND_ACCOUNT in line for line in refusals)
    # nothing held for the impostor (the friend's "hello" is completed just after its reply is sent)
    wait_for(lambda: bot.service.inbox.pending() == [], what="the inbox empty")

    # The record outlives a restart.
    bot.stop()
    start()
    daemon.message(OWNER, "/now", uuid=IMPOSTOR)
    daemon.message(OWNER, "/help")
    wait_for(lambda: len(daemon.sent) >= 4, what="the owner's /help")
    assert "Commands:" in daemon.sent[3]["message"] and len(daemon.sent) == 4


def test_owner_account_with_its_number_hidden_is_the_owner_and_an_unpinned_number_is_trusted(
    start, daemon, chat_server, workspace
):
    owner_data(workspace)
    start(patch=pairing_off)  # the unknown account is told it is not allowed (pairing codes: test_pairing.py)
    daemon.message(OWNER, "/now", uuid=OWNER_ACCOUNT, number=False)  # nothing pinned yet: the UUID is unknown
    assert "not authorised" in daemon.wait_sent(1)[0]["message"]
    daemon.message(OWNER, "/stats")  # a number with no account on record is trusted, and pinned now
    daemon.wait_sent(2)
    daemon.message(OWNER, "/now", uuid=OWNER_ACCOUNT, number=False)  # the pinned account, number hidden
    sent = daemon.wait_sent(3)
    assert OWNER_SECRET in sent[2]["message"] and sent[2]["recipient"] == [OWNER_ACCOUNT]


def test_an_account_on_record_cannot_claim_a_number_not_yet_pinned(start, daemon, chat_server, workspace):
    owner_data(workspace)
    start()
    daemon.message(FRIEND, "/help")  # pins the friend's number to the friend's account
    daemon.wait_sent(1)
    daemon.message(OWNER, "/now", uuid=FRIEND_ACCOUNT)  # the owner's number is not pinned yet
    daemon.message(OWNER, "/now")  # the owner's own account: served, and pinned now
    wait_for(lambda: len(daemon.sent_to(OWNER)) == 1, what="the owner's /now")
    assert len(daemon.sent) == 2 and OWNER_SECRET in daemon.sent_to(OWNER)[0]["message"]
    assert json.loads(workspace.read_text(IDENTITIES)) == {FRIEND: FRIEND_ACCOUNT, OWNER: OWNER_ACCOUNT}


def test_another_account_with_the_owners_number_cannot_answer_the_owners_question(
    start, daemon, chat_server, workspace
):
    chat_server.enqueue(
        json.dumps({"skill": "save_note", "args": {"name": "groceries", "text": "bread"}}), '{"reply": "Not saved."}'
    )
    start(patch=lambda config: config.update(policy={"capabilities": {"write": "ask"}}))
    daemon.message(OWNER, "note groceries: bread")  # pins the owner's account; the turn asks to write
    assert daemon.wait_sent(1)[0]["message"].startswith("Confirm this action?")
    daemon.message(OWNER, "yes", uuid=IMPOSTOR)  # refused: no answer to the question, nothing written
    daemon.message(OWNER, "no")  # the owner's own answer
    assert daemon.wait_sent(2)[1]["message"].startswith("Not saved.")
    daemon.message(OWNER, "/help")  # behind anything of that chat still queued
    assert "Commands:" in daemon.wait_sent(3)[2]["message"]
    assert not workspace.exists("notes/groceries.md")
    assert len(daemon.sent) == 3 and len(chat_server.chat_requests) == 2


def test_a_damaged_identities_file_is_moved_aside_and_numbers_are_pinned_anew(start, daemon, workspace, caplog):
    """Through the bot: what the record said is kept for a human, one warning, and the owner is served and pinned."""
    workspace.write_text(IDENTITIES, "{not json")
    caplog.set_level(logging.WARNING, logger="messaging_llm_bot.channels.signal")
    start()
    daemon.message(OWNER, "/now")
    daemon.wait_sent(1)
    [aside] = workspace.list(f"{IDENTITIES}.broken-*")
    assert workspace.read_text(aside) == "{not json"
    assert json.loads(workspace.read_text(IDENTITIES)) == {OWNER: OWNER_ACCOUNT}
    assert sum("numbers are pinned to accounts anew" in r.getMessage() for r in caplog.records) == 1
