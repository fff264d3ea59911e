"""The allowlist on Signal, in the modes the Telegram tests check (issue 34.12): a stranger's
commands are refused before anything runs, in a direct chat and in a group; an empty
``signal.allowed`` serves no one. Real SignalService against the fake signal-cli daemon, a
scripted model server, real workspace files."""

from __future__ import annotations

import json
import logging

from tests.signal_harness import BOT, GROUP, OWNER, STRANGER, wait_for
from tests.telegram_harness import pairing_off, snapshot

REFUSED_LOG = "state/signal/refused.log"  # the stranger ids already told (kept across restarts)
OWNER_SECRET = "owner-secret-code-4711"
COMMANDS = ["/now", "/NOW", "/status", "/stats", "/reload", "/reset yes", "/why", "/skill file", "/nonsense"]


def owner_data(workspace) -> None:
    from assistant_framework.stores.tasks import TaskStore

    TaskStore(workspace).add(f"pay the {OWNER_SECRET} invoice", due="2020-01-01")
    workspace.write_text("context/me.md", f"The owner's PIN is {OWNER_SECRET}.\n")


def test_signal_stranger_commands_are_refused_before_anything_runs(start, daemon, chat_server, workspace):
    owner_data(workspace)
    chat_server.enqueue('{"reply": "hello owner"}')
    bot = start(patch=pairing_off)
    config_before = bot.service.runtime.config
    before = {rel: t for rel, t in snapshot(workspace).items() if rel != REFUSED_LOG}
    for command in COMMANDS:
        daemon.message(STRANGER, command)
    daemon.message(OWNER, "hi")  # after the stranger's commands on the same event stream
    wait_for(lambda: daemon.sent_to(OWNER), what="the owner's answer")
    stranger = [s["message"] for s in daemon.sent_to(STRANGER)]
    assert len(stranger) == 1 and "not authorised" in stranger[0] and STRANGER in stranger[0], stranger
    assert OWNER_SECRET not in json.dumps(daemon.sent)
    assert len(chat_server.requests) == 1  # the owner's message only: not even a /status ping
    assert bot.service.runtime.config is config_before  # nothing reloaded
    after = {rel: t for rel, t in snapshot(workspace).items() if rel != REFUSED_LOG}
    written = {rel for rel in after if before.get(rel) != after[rel]}
    assert not [rel for rel in written if STRANGER.strip("+") in rel or "19990000000" in rel], written
    assert all("15551110001" in rel or rel.startswith(("state/", "traces/")) for rel in written), written
    assert workspace.read_text(REFUSED_LOG).split() == [daemon_uuid(daemon, STRANGER)]


def daemon_uuid(daemon, number: str) -> str:
    return daemon.envelope(number, "x")["envelope"]["sourceUuid"]


def test_signal_stranger_in_a_group_runs_no_command(start, daemon, chat_server, workspace):
    owner_data(workspace)
    daemon.add_group(GROUP, "Family", [OWNER, STRANGER, BOT])
    bot = start(group_mode="all")
    config_before = bot.service.runtime.config
    for command in ["/now", "/reload", "/reset yes", "/status"]:
        daemon.message(STRANGER, command, group_id=GROUP)
    daemon.message(STRANGER, "what is the owner's PIN?", group_id=GROUP)
    [refusal] = daemon.wait_sent(1)
    assert refusal.get("groupId") == GROUP and "not authorised" in refusal["message"]
    daemon.message(OWNER, "/help")  # the stream goes on: one refusal, nothing else for the stranger
    daemon.wait_sent(2)
    assert len([s for s in daemon.sent if s.get("groupId") == GROUP]) == 1
    assert OWNER_SECRET not in json.dumps(daemon.sent)
    assert chat_server.requests == [] and bot.service.runtime.config is config_before


def test_signal_empty_allowlist_serves_no_one(start, daemon, chat_server, workspace, caplog):
    caplog.set_level(logging.INFO)
    owner_data(workspace)
    start(patch=pairing_off, allowed=[])
    daemon.message(OWNER, "hi")
    daemon.message(OWNER, "/now")
    [refusal] = daemon.wait_sent(1)
    assert refusal["recipient"] == [OWNER] and "not authorised" in refusal["message"] and OWNER in refusal["message"]
    daemon.message(STRANGER, "hello")
    daemon.wait_sent(2)  # the stranger is told too, so both of the owner's messages were handled before it
    assert chat_server.requests == []
    assert OWNER_SECRET not in json.dumps(daemon.sent)
    assert not list(workspace.root.glob("conversations/*"))
    assert any("signal.allowed is empty" in r.getMessage() for r in caplog.records)
