"""The agent end to end against the fake model server with outputs small models really write:
the same write call again in the next round, and so on (built-in skills, real files)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from messaging_llm_bot.agent.incoming import AgentMessage

FIXED = datetime(2026, 3, 3, 13, 5, 42, tzinfo=timezone.utc)  # a Tuesday; 14:05 in Berlin


def test_a_write_call_repeated_in_the_next_round_is_not_run_twice(bot_config, workspace, chat_server, make_agent):
    # A small model often answers its own result with the same call again: one task, one reminder.
    add = '{"skill": "tasks", "args": {"action": "add", "title": "buy milk"}}'
    remind = '{"skill": "reminders", "args": {"action": "add", "text": "call mom", "in_minutes": 30}}'
    chat_server.enqueue(add, add, '{"reply": "Added."}', remind, remind, '{"reply": "Set."}')
    agent = make_agent(bot_config, workspace, clock=lambda: FIXED)
    assert agent.handle(AgentMessage("c1", "add buy milk")).reply.startswith("Added.")
    assert agent.handle(AgentMessage("c1", "remind me to call mom in 30 minutes", chat_id=1)).reply.startswith("Set.")
    tasks = json.loads((workspace.root / "tasks/tasks.json").read_text())
    assert [t["title"] for t in tasks] == ["buy milk"]
    reminders = json.loads((workspace.root / "reminders/reminders.json").read_text())
    assert [r["text"] for r in reminders] == ["call mom"]
    told = chat_server.chat_requests[2]["messages"][-1]["content"]
    assert "already ran in this turn" in told and "added task t1: buy milk" in told, told


def test_a_call_missing_its_last_brace_runs_instead_of_reaching_the_user(
    bot_config, workspace, chat_server, make_agent
):
    # Small models miscount the closing braces of the nested args object.
    chat_server.enqueue('{"skill": "tasks", "args": {"action": "add", "title": "buy milk"}', '{"reply": "Added."}')
    result = make_agent(bot_config, workspace, clock=lambda: FIXED).handle(AgentMessage("c1", "add buy milk"))
    assert result.reply.startswith("Added."), (result.reply, result.skill_calls)
    tasks = json.loads((workspace.root / "tasks/tasks.json").read_text())
    assert [t["title"] for t in tasks] == ["buy milk"]


def test_a_call_cut_inside_its_args_shows_no_json_to_the_user(bot_config, workspace, chat_server, make_agent):
    # Args still open: what was meant cannot be known, so nothing runs, and the JSON is not the reply.
    chat_server.enqueue('{"skill": "tasks", "args": {"action": "add", "title": "buy milk", "note": {"x": 1}')
    result = make_agent(bot_config, workspace, clock=lambda: FIXED).handle(AgentMessage("c1", "add buy milk"))
    assert '"skill"' not in result.reply, result.reply
    assert not (workspace.root / "tasks/tasks.json").exists()


def test_a_dotted_skill_name_with_flat_args_runs(bot_config, workspace, chat_server, make_agent):
    # Two known drifts at once: "tasks.add" and the args beside the skill key instead of in "args".
    chat_server.enqueue('{"skill": "tasks.add", "title": "buy milk", "due": "2026-03-04"}', '{"reply": "Added."}')
    result = make_agent(bot_config, workspace, clock=lambda: FIXED).handle(
        AgentMessage("c1", "add buy milk for tomorrow")
    )
    assert result.reply.startswith("Added."), result.reply
    tasks = json.loads((workspace.root / "tasks/tasks.json").read_text())
    assert [(t["title"], t["due"]) for t in tasks] == [("buy milk", "2026-03-04")]
