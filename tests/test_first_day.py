"""A new user's first day, through the real processes: what trips someone who follows the README."""

from __future__ import annotations

import json

from tests.console_harness import run_bot, write_config


def test_what_a_skill_saved_is_recalled_in_a_new_conversation_at_once(tmp_path, chat_server, test_skills_dir):
    """Remember something, /new, ask for it back: the note the skill wrote is recalled in the next turn, not only
    after the memory index's periodic refresh (a minute without background work, never during a busy chat)."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "memory.json").write_text(json.dumps({"enabled": True, "extract_facts": False}))
    workspace = tmp_path / "ws"
    chat_server.enqueue(
        '{"skill": "save_note", "args": {"name": "anna", "text": "Anna birthday fourteenth of March"}}',
        '{"reply": "Saved."}',
        '{"reply": "On the fourteenth of March."}',
    )
    stdin = "remember: Anna birthday fourteenth of March\n/new\nwhen is Anna birthday?\n"
    proc = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(workspace)], stdin)
    assert proc.returncode == 0, proc.stderr
    assert "On the fourteenth of March." in proc.stdout
    asked = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert "when is Anna birthday?" in asked
    assert "[Recalled memory" in asked
    recalled = asked.split("[Recalled memory", 1)[1]
    assert "(notes, " in recalled and "fourteenth of March" in recalled
