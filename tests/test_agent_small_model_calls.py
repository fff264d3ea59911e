"""The agent end to end against the fake model server with outputs small models really write:
the same write call again in the next round, and so on (built-in skills, real files)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from assistant_framework.skills import SkillManager
from messaging_llm_bot.agent.loop import Agent
from messaging_llm_bot.llm.client import LLMClient

FIXED = datetime(2026, 3, 3, 13, 5, 42, tzinfo=timezone.utc)  # a Tuesday; 14:05 in Berlin


def make_agent(config, workspace) -> Agent:
    skills = SkillManager.from_config(config, workspace)
    return Agent(config, workspace, skills, LLMClient(config["llm"]), clock=lambda: FIXED)


def test_a_write_call_repeated_in_the_next_round_is_not_run_twice(bot_config, workspace, chat_server):
    # A small model often answers its own result with the same call again: one task, one reminder.
    add = '{"skill": "tasks", "args": {"action": "add", "title": "buy milk"}}'
    remind = '{"skill": "reminders", "args": {"action": "add", "text": "call mom", "in_minutes": 30}}'
    chat_server.enqueue(add, add, '{"reply": "Added."}', remind, remind, '{"reply": "Set."}')
    agent = make_agent(bot_config, workspace)
    assert agent.handle_message("c1", "add buy milk").reply.startswith("Added.")
    assert agent.handle_message("c1", "remind me to call mom in 30 minutes", chat_id=1).reply.startswith("Set.")
    tasks = json.loads((workspace.root / "tasks/tasks.json").read_text())
    assert [t["title"] for t in tasks] == ["buy milk"]
    reminders = json.loads((workspace.root / "reminders/reminders.json").read_text())
    assert [r["text"] for r in reminders] == ["call mom"]
    told = chat_server.chat_requests[2]["messages"][-1]["content"]
    assert "already ran in this turn" in told and "added task t1: buy milk" in told, told
