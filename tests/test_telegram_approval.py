"""Owner confirmation in Telegram: a delete the policy marks "ask" waits for a button press."""

from __future__ import annotations

import pytest

from messaging_llm_bot.conversation.approvals import STOPPED_UNANSWERED, Answer
from tests.telegram_harness import DELETE, OWNER, STRANGER, approval_question, texts


def test_confirmed_delete_runs(fake, start_bot, chat_server, workspace):
    workspace.write_text("notes/important.md", "# Important\n")
    start_bot()
    chat_server.enqueue(DELETE, '{"reply": "Deleted notes/important.md."}')
    fake.send_message("delete notes/important.md")
    message, buttons = approval_question(fake)
    assert "skill: file" in message["text"] and "notes/important.md" in message["text"]
    assert workspace.exists("notes/important.md")  # nothing happens before the press
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes")), message["message_id"])
    fake.wait_for(lambda: any("Deleted notes/important.md" in t for t in texts(fake)), timeout=10)
    assert not workspace.exists("notes/important.md")
    assert any(t.startswith("Confirmed") for t in texts(fake))
    assert workspace.read_jsonl("state/audit.jsonl")[-1]["outcome"] == "ok"


def test_declined_delete_does_not_run(fake, start_bot, chat_server, workspace):
    workspace.write_text("notes/important.md", "# Important\n")
    start_bot()
    chat_server.enqueue(DELETE, '{"reply": "Okay, I kept it."}')
    fake.send_message("delete notes/important.md")
    message, buttons = approval_question(fake)
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":no")), message["message_id"])
    fake.wait_for(lambda: any("I kept it" in t for t in texts(fake)), timeout=10)
    assert workspace.exists("notes/important.md")
    assert "did not confirm" in chat_server.chat_requests[-1]["messages"][-1]["content"]


def test_a_stranger_cannot_press_the_button(fake, start_bot, chat_server, workspace):
    workspace.write_text("notes/important.md", "# Important\n")
    start_bot()
    chat_server.enqueue(DELETE, '{"reply": "Deleted."}')
    fake.send_message("delete notes/important.md")
    message, buttons = approval_question(fake)
    fake.callback_query(STRANGER, next(b for b in buttons if b.endswith(":yes")), message["message_id"], chat_id=OWNER)
    refusal = fake.wait_for(
        lambda: [c for c in fake.calls("answerCallbackQuery") if "not authorised" in str(c["params"].get("text"))],
        timeout=10,
    )
    assert str(STRANGER) in refusal[0]["params"]["text"]
    assert workspace.exists("notes/important.md")
    # The owner can still answer.
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":no")), message["message_id"])
    fake.wait_for(lambda: any(t.startswith("Declined") for t in texts(fake)), timeout=10)
    assert workspace.exists("notes/important.md")


def test_only_the_owner_can_confirm(fake, start_bot, chat_server, workspace):
    """A second allowed user is served, but cannot approve destructive calls on the owner's data."""
    workspace.write_text("notes/important.md", "# Important\n")
    start_bot(allowed_user_ids=[OWNER, 2])
    chat_server.enqueue(DELETE, '{"reply": "I need the owner to confirm that."}')
    fake.send_message("delete notes/important.md", user_id=2, username="guest")
    fake.wait_for(lambda: any("owner to confirm" in m.get("text", "") for m in fake.messages(2)), timeout=10)
    assert workspace.exists("notes/important.md")
    assert not any("Confirm this action?" in m.get("text", "") for m in fake.messages(2) + fake.messages(OWNER))
    assert "cannot give" in chat_server.chat_requests[-1]["messages"][-1]["content"]


@pytest.mark.parametrize("first", ["stop", "press"])
def test_a_press_in_the_loop_pass_of_the_stop_says_what_the_turn_does(fake, start_bot, chat_server, workspace, first):
    """The owner's Confirm (through the Bot API, as pressed) and the bot's stop land in one loop pass: the stop
    is begun on the bot's loop right before, or right after, the press is taken. What the question's message says
    is what the turn does: the stop first, the file stays and nothing says "Confirmed"; the press first, the
    file goes (within the stop's wait) and the message says so. Before, the stop first was shown as
    "Confirmed: doing it." while the turn was told no, and the press first was declined all the same."""
    workspace.write_text("notes/important.md", "# Important\n")
    bot = start_bot(config_patch=lambda config: config.setdefault("runtime", {}).update(shutdown_timeout_seconds=60))
    questions = bot.service.approvals.questions
    taken = questions.answer

    def press_and_stop(key: str, answer: Answer) -> bool:  # on the bot's loop, in the pass the press is handled
        if first == "stop":
            bot.service.shutdown.begin("the test's stop")
        took = taken(key, answer)
        if first == "press":
            bot.service.shutdown.begin("the test's stop")
        return took

    questions.answer = press_and_stop  # type: ignore[method-assign]
    chat_server.enqueue(DELETE, '{"reply": "Done, or not: see above."}')
    fake.send_message("delete notes/important.md")
    message, buttons = approval_question(fake)
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes")), message["message_id"])
    assert bot.join(30) == 0
    said = [c["params"]["text"] for c in fake.calls("editMessageText") if c["params"].get("text")]
    confirmed = [t for t in said if t.startswith("Confirmed")]
    if first == "stop":
        assert workspace.exists("notes/important.md") and confirmed == [], said
        assert set(said) == {STOPPED_UNANSWERED}  # the press's answer and the question's end say the same
        assert "did not confirm" in chat_server.chat_requests[-1]["messages"][-1]["content"]
    else:
        assert not workspace.exists("notes/important.md") and confirmed == ["Confirmed: doing it."], said
        assert workspace.read_jsonl("state/audit.jsonl")[-1]["outcome"] == "ok"
