"""/stop in Telegram: it skips the chat's queue, ends the answer being written (streamed text kept),
counts an open confirmation as declined, and says when there is nothing to stop."""

from __future__ import annotations

import json

from tests.telegram_harness import DELETE, approval_question, texts

WORDS = " ".join(f"word{i}" for i in range(300))


def _shown(fake) -> list[str]:
    """Every text the owner's chat showed: sent messages and their edits."""
    return [call["params"].get("text", "") for call in fake.calls("sendMessage") + fake.calls("editMessageText")]


def test_stop_ends_a_streamed_answer_and_keeps_what_was_shown(fake, start_bot, chat_server, workspace, monkeypatch):
    from messaging_llm_bot.conversation import progress as progress_mod

    # The first live message 50 ms into the turn instead of 0.3 s, edits every 0.1 s instead of Telegram's 1 s
    # (their own tests: test_telegram_progress.py): word5 is on screen, and the stop shown, sooner.
    monkeypatch.setattr(progress_mod, "FIRST_MESSAGE_GRACE_SECONDS", 0.05)
    start_bot(stream=True, edit_interval_seconds=0.1)
    chat_server.enqueue({"content": json.dumps({"reply": WORDS}), "chunk_delay": 0.02})
    fake.send_message("tell me a very long story")
    fake.wait_for(lambda: any("word5" in t for t in _shown(fake)), timeout=15)
    fake.send_message("/stop")
    fake.wait_for(lambda: "Stopping the answer I was writing." in texts(fake), timeout=10)
    fake.wait_for(lambda: any("⏹ Stopped." in t for t in _shown(fake)), timeout=10)
    final = next(t for t in reversed(_shown(fake)) if "⏹ Stopped." in t)
    assert final.startswith("word0 word1") and "word299" not in final
    fake.wait_for(lambda: chat_server.streams_cut == 1, timeout=10)  # the model server stopped generating
    chat_server.enqueue('{"reply": "Here I am."}')
    fake.send_message("still there?")
    fake.wait_for(lambda: "Here I am." in texts(fake), timeout=10)
    history = [m["content"] for m in chat_server.chat_requests[-1]["messages"][1:-1]]
    assert history == []  # the stopped answer is not part of the conversation


def test_stop_declines_an_open_confirmation(fake, start_bot, chat_server, workspace):
    workspace.write_text("notes/important.md", "# Important\n")
    start_bot()
    chat_server.enqueue(DELETE)
    fake.send_message("delete notes/important.md")
    approval_question(fake)
    fake.send_message("/stop")
    fake.wait_for(lambda: any("⏹ Stopped." in t for t in texts(fake)), timeout=10)
    assert workspace.exists("notes/important.md")
    assert len(chat_server.chat_requests) == 1  # no round after the stop


def test_the_bots_stop_declines_an_open_confirmation_at_once_and_the_turn_ends(fake, start_bot, chat_server, workspace):
    """The bot stopping while a turn waits for the owner's button: no press can come any more, so the question
    is declined at once and the turn goes on to its end within the stop's wait. Its thread waited out the
    question's timeout (5 minutes and 30 s) instead, past the bot's loop, holding the process's exit."""
    workspace.write_text("notes/important.md", "# Important\n")
    bot = start_bot(config_patch=lambda config: config.setdefault("runtime", {}).update(shutdown_timeout_seconds=60))
    chat_server.enqueue(DELETE, '{"reply": "Okay, I kept it."}')
    fake.send_message("delete notes/important.md")
    approval_question(fake)
    assert bot.stop() == 0
    assert bot.service.shutdown.turns.pool.running == 0  # the turn ended
    assert workspace.exists("notes/important.md")
    assert "did not confirm" in chat_server.chat_requests[-1]["messages"][-1]["content"]


def test_stop_with_nothing_running_says_so(fake, start_bot, chat_server):
    start_bot()
    fake.send_message("/stop")
    fake.wait_for(lambda: any("nothing to stop" in t for t in texts(fake)), timeout=10)
    assert chat_server.chat_requests == []
