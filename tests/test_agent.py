"""The agent loop end to end against the loopback fake model server (no mocks of requests)."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone

import pytest

from messaging_llm_bot.agent.honesty import NOTHING_SAVED_NOTE
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.agent.loop import FAILED_TURN_REPLY, AgentEvent
from messaging_llm_bot.protocol import final_answer_request

FIXED = datetime(2026, 3, 3, 13, 5, 42, tzinfo=timezone.utc)  # a Tuesday; 14:05 in Berlin


@pytest.fixture
def agent(bot_config, workspace, make_agent):
    return make_agent(bot_config, workspace, clock=lambda: FIXED)


def last_content(request) -> str:
    return request["messages"][-1]["content"]


def test_multi_round_write_then_answer(agent, chat_server, workspace):
    chat_server.enqueue(
        '{"skill": "save_note", "args": {"name": "milk", "text": "buy oat milk"}}',
        '{"skill": "read_note", "args": {"name": "milk"}}',
        '{"reply": "Your note says: buy oat milk"}',
    )
    result = agent.handle(AgentMessage("c1", "note that I need oat milk"))
    assert result.ok and result.rounds == 3
    assert workspace.read_text("notes/milk.md") == "buy oat milk"
    assert result.reply.startswith("Your note says: buy oat milk")
    assert "(saved to notes/milk.md)" in result.reply
    assert [c.skill for c in result.skill_calls] == ["save_note", "read_note"]
    requests = chat_server.chat_requests
    assert len(requests) == 3
    assert '"path": "notes/milk.md"' in last_content(requests[1])
    assert "buy oat milk" in last_content(requests[2])
    # The model's own call is part of the conversation it sees next.
    assert requests[1]["messages"][-2] == {
        "role": "assistant",
        "content": '{"skill": "save_note", "args": {"name": "milk", "text": "buy oat milk"}}',
    }


def test_invalid_args_error_reaches_model_and_is_corrected(agent, chat_server):
    chat_server.enqueue(
        '{"skill": "add", "args": {"a": "two", "b": 3}}',
        '{"skill": "add", "args": {"a": 2, "b": 3}}',
        '{"reply": "2 + 3 = 5"}',
    )
    result = agent.handle(AgentMessage("c1", "add two and three"))
    assert result.ok and result.reply == "2 + 3 = 5"
    feedback = last_content(chat_server.chat_requests[1])
    assert "was not run" in feedback and "args.a" in feedback and "integer" in feedback
    assert '"sum": 5' in last_content(chat_server.chat_requests[2])
    assert [c.ok for c in result.skill_calls] == [False, True]


def test_unknown_skill_names_closest(agent, chat_server):
    chat_server.enqueue('{"skill": "ad", "args": {"a": 1, "b": 1}}', "It is 2.")
    result = agent.handle(AgentMessage("c1", "1+1?"))
    assert result.ok and result.reply == "It is 2."
    feedback = last_content(chat_server.chat_requests[1])
    assert "no skill named 'ad'" in feedback and "Did you mean" in feedback and "add" in feedback
    assert result.skill_calls[0].error_kind == "unknown_skill"


@pytest.mark.parametrize(
    "output",
    [
        'Sure, one moment.\n```json\n{"skill": "add", "args": {"a": 1, "b": 2}}\n```',
        "{'skill': 'add', 'args': {'a': 1, 'b': 2},}",
        '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}</tool_call>',
    ],
    ids=["fenced_with_prose", "single_quotes_trailing_comma", "tool_call_tag_string_args"],
)
def test_malformed_call_forms_still_run(agent, chat_server, output):
    chat_server.enqueue(output, '{"reply": "3"}')
    result = agent.handle(AgentMessage("c1", "1+2"))
    assert result.ok and result.reply == "3"
    assert result.skill_calls[0].skill == "add" and result.skill_calls[0].ok
    assert '"sum": 3' in last_content(chat_server.chat_requests[1])


@pytest.mark.parametrize(
    "content",
    ['{"name": "Bob", "age": 3}', "To add a note, say: add milk to my notes.", '{"notes": "buy milk"}'],
)
def test_prose_and_content_json_are_never_calls(agent, chat_server, workspace, content):
    chat_server.enqueue(content)
    result = agent.handle(AgentMessage("c1", "hi"))
    assert result.ok and result.reply == content and result.skill_calls == []
    assert len(chat_server.chat_requests) == 1
    assert workspace.list("notes/*") == []


def test_round_limit_then_final_answer_request(agent, chat_server):
    chat_server.set_handler(lambda request: '{"skill": "add", "args": {"a": 1, "b": 1}}')
    result = agent.handle(AgentMessage("c1", "loop forever"))
    requests = chat_server.chat_requests
    assert len(requests) == 4  # max_skill_rounds=3 rounds of calls, then one final request
    assert final_answer_request() in last_content(requests[3])
    assert all(final_answer_request() not in last_content(r) for r in requests[:3])
    assert result.ok and "3 skill rounds" in result.reply
    assert len(result.skill_calls) == 3


def test_final_answer_after_limit_is_used(agent, chat_server):
    chat_server.enqueue(*['{"skill": "add", "args": {"a": 1, "b": 1}}'] * 3, '{"reply": "Done: 2"}')
    result = agent.handle(AgentMessage("c1", "go"))
    assert result.reply == "Done: 2" and result.rounds == 4


def test_skill_exception_is_fed_back(agent, chat_server):
    chat_server.enqueue('{"skill": "boom", "args": {}}', "The skill failed, sorry.")
    result = agent.handle(AgentMessage("c1", "explode"))
    assert result.ok and result.reply == "The skill failed, sorry."
    feedback = last_content(chat_server.chat_requests[1])
    assert "Error: skill 'boom' failed: RuntimeError: kaput" in feedback


def test_claimed_save_without_write_gets_honest_note(agent, chat_server):
    chat_server.enqueue("Sure, I'll remember that your cat is called Mia.")
    result = agent.handle(AgentMessage("c1", "my cat is called Mia"))
    assert result.reply.endswith(NOTHING_SAVED_NOTE)
    chat_server.enqueue("The capital of France is Paris.")
    assert agent.handle(AgentMessage("c1", "capital of france?")).reply == "The capital of France is Paris."


def test_llm_server_error_then_recovery_keeps_history(agent, chat_server, workspace):
    chat_server.enqueue("first answer")
    agent.handle(AgentMessage("c1", "first"))
    before = workspace.read_text("conversations/c1/history.json")
    chat_server.enqueue({"status": 503})
    failed = agent.handle(AgentMessage("c1", "second"))
    assert not failed.ok and "fake" in failed.reply and "503" in failed.reply
    assert len(failed.reply) < 300
    assert workspace.read_text("conversations/c1/history.json") == before
    chat_server.enqueue("third answer")
    ok = agent.handle(AgentMessage("c1", "third"))
    assert ok.ok and ok.reply == "third answer"
    contents = [m["content"] for m in chat_server.chat_requests[-1]["messages"][1:-1]]
    assert contents == ["first", "first answer"]  # the failed turn left no trace in history


def test_llm_unreachable_short_message(bot_config, workspace, chat_server, make_agent):
    chat_server.stop()
    result = make_agent(bot_config, workspace, clock=lambda: FIXED).handle(AgentMessage("c1", "hello"))
    assert not result.ok and "not reachable" in result.reply and "connection refused" in result.reply
    assert workspace.read_json("conversations/c1/history.json") is None


def test_context_length_retries_once_with_shorter_history(agent, chat_server):
    for i in range(4):
        chat_server.enqueue(f"answer {i}")
        agent.handle(AgentMessage("c1", f"question {i} " + "x" * 200))
    chat_server.enqueue(
        {
            "status": 400,
            "body": {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens",
                    "code": "context_length_exceeded",
                }
            },
        },
        "short answer",
    )
    result = agent.handle(AgentMessage("c1", "and now?"))
    assert result.ok and result.reply == "short answer"
    failed, retried = chat_server.chat_requests[-2:]
    assert len(retried["messages"]) < len(failed["messages"])
    assert retried["messages"][0] == failed["messages"][0] and retried["messages"][-1] == failed["messages"][-1]


def test_context_length_twice_gives_up(agent, chat_server):
    chat_server.enqueue("a0")
    agent.handle(AgentMessage("c1", "q0"))
    too_long = {"status": 400, "body": {"error": {"message": "maximum context length exceeded"}}}
    chat_server.enqueue(too_long, too_long)
    result = agent.handle(AgentMessage("c1", "q1"))
    assert not result.ok and "too long" in result.reply
    assert len(chat_server.chat_requests) == 3


def test_streaming_never_shows_call_text(agent, chat_server):
    chat_server.enqueue(
        {"content": '{"skill": "add", "args": {"a": 2, "b": 2}}'},
        {"content": '{"reply": "Two and two make four."}'},
    )
    events: list[AgentEvent] = []
    result = agent.handle(AgentMessage("c1", "2+2", stream=True, on_event=events.append))
    assert result.ok and result.reply == "Two and two make four."
    deltas = [e.data["text"] for e in events if e.kind == "delta"]
    assert deltas and deltas[-1] == "Two and two make four."
    assert all("skill" not in d and "{" not in d for d in deltas)
    kinds = [e.kind for e in events]
    assert kinds[0] == "thinking" and "skill_call" in kinds and "skill_result" in kinds and kinds[-1] == "done"
    assert all(r.get("stream") is True for r in chat_server.chat_requests)


def test_failing_event_handler_does_not_break_turn(agent, chat_server):
    def handler(event):
        raise RuntimeError("frontend bug")

    chat_server.enqueue("fine")
    assert agent.handle(AgentMessage("c1", "hi", on_event=handler)).reply == "fine"


def test_unexpected_exception_becomes_short_reply(bot_config, workspace, chat_server, caplog, make_agent):
    def broken_clock():
        raise OSError("clock unplugged")

    agent = make_agent(bot_config, workspace, clock=broken_clock)
    events = []
    with caplog.at_level(logging.ERROR):
        result = agent.handle(AgentMessage("c1", "hi", on_event=events.append))
    assert not result.ok and result.reply == FAILED_TURN_REPLY
    assert events[-1].kind == "error"
    assert "clock unplugged" in caplog.text and "Traceback" in caplog.text


def test_reset_clears_history(agent, chat_server, workspace):
    chat_server.enqueue("a", "b")
    agent.handle(AgentMessage("c1", "one"))
    agent.handle(AgentMessage("c2", "other chat"))
    assert "2 messages" in agent.reset("c1")
    assert workspace.read_json("conversations/c1/history.json") is None
    assert len(workspace.read_json("conversations/c2/history.json")) == 2
    assert "no history" in agent.reset("c1")


def test_footer_when_enabled(bot_config, workspace, chat_server, make_agent):
    bot_config["runtime"]["reply_footer"] = True
    chat_server.enqueue(
        {
            "content": "hi",
            "usage": {"prompt_tokens": 1200, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 1000}},
        }
    )
    result = make_agent(bot_config, workspace, clock=lambda: FIXED).handle(AgentMessage("c1", "hello"))
    assert result.footer.startswith("— 1200 in (1000 cached) · 7 out · 1 round · ")
    assert result.usage == {"prompt_tokens": 1200, "completion_tokens": 7, "cached_tokens": 1000}


def test_skill_context_carries_ids(bot_config, workspace, chat_server, tmp_path, make_agent):
    skill = tmp_path / "ctx_skills" / "whoami"
    skill.mkdir(parents=True)
    (skill / "__init__.py").write_text(
        'DESCRIPTION = "Who is asking"\n'
        "def run(workspace, args, context):\n"
        "    return {'conversation': context.conversation_id, 'chat': context.chat_id, 'user': context.user_id,\n"
        "            'tz': context.timezone, 'has_clock': callable(context.services.get('clock')),\n"
        "            'memory': context.services.get('memory')}\n"
    )
    bot_config["runtime"]["skills_dirs"].append(str(tmp_path / "ctx_skills"))
    chat_server.enqueue('{"skill": "whoami", "args": {}}', "ok")
    make_agent(bot_config, workspace, clock=lambda: FIXED).handle(AgentMessage("tg:7", "who?", chat_id=7, user_id=42))
    fed_back = last_content(chat_server.chat_requests[1])
    payload = json.loads(fed_back.split("\n")[1])
    assert payload == {
        "conversation": "tg:7",
        "chat": 7,
        "user": 42,
        "tz": "Europe/Berlin",
        "has_clock": True,
        "memory": None,
    }


def test_memory_wired_log_recall_and_why(bot_config, workspace, chat_server, make_agent):
    from assistant_framework.memory import MemoryService

    memory = MemoryService(workspace, bot_config, start_worker=False)
    try:
        workspace.write_text("notes/dentist.md", "Dentist appointment with Dr Zhivago on Lindenstrasse")
        memory.refresh()
        agent = make_agent(bot_config, workspace, clock=lambda: FIXED, memory=memory)
        chat_server.enqueue("It is with Dr Zhivago.")
        result = agent.handle(AgentMessage("c1", "who is my dentist Zhivago appointment?"))
        assert result.ok
        assert result.recalled and result.recalled[0]["path"] == "notes/dentist.md"
        assert agent.last_recall("c1") == result.recalled
        sent = last_content(chat_server.chat_requests[0])
        assert "Lindenstrasse" in sent and sent.index("Lindenstrasse") < sent.index("[Now]")
        assert "Lindenstrasse" not in chat_server.chat_requests[0]["messages"][0]["content"]
        logged = [row for p in workspace.list("conversations/c1/*.jsonl") for row in workspace.read_jsonl(p)]
        assert [(r["role"], r["text"]) for r in logged] == [
            ("user", "who is my dentist Zhivago appointment?"),
            ("assistant", "It is with Dr Zhivago."),
        ]
    finally:
        memory.close()


def test_builtin_notes_write_shows_location_and_read_does_not_count(agent, chat_server, workspace):
    if agent.skills.get("notes") is None:
        pytest.skip("built-in notes skill not present")
    chat_server.enqueue(
        '{"skill": "notes", "args": {"action": "add", "title": "gift", "body": "a red scarf"}}', "Saved your note."
    )
    saved = agent.handle(AgentMessage("c1", "note: gift idea a red scarf"))
    assert saved.skill_calls[0].ok, saved.skill_calls
    assert "(saved to notes/" in saved.reply and NOTHING_SAVED_NOTE not in saved.reply
    chat_server.enqueue('{"skill": "notes", "args": {"action": "list"}}', "I saved that for you.")
    listed = agent.handle(AgentMessage("c1", "save it again"))
    assert listed.reply.endswith(NOTHING_SAVED_NOTE)


def test_honesty_helpers():
    from messaging_llm_bot.agent.honesty import check_memory_claim, is_write_call, saved_location

    assert saved_location("saved note 'x' to notes/x.md") == "notes/x.md"
    assert saved_location("wrote 5 characters to learnings/general.md.") == "learnings/general.md"
    assert saved_location({"path": "a/b.md"}) == "a/b.md" and saved_location("no match") is None
    assert is_write_call(["read", "write"], {"action": "add"}) and not is_write_call(
        ["read", "write"], {"action": "list"}
    )
    assert not is_write_call(["read"], {}) and is_write_call(["write"], {})
    assert check_memory_claim("Noted! I'll keep that in mind.", False)
    assert check_memory_claim("Noted.", True) is None
    assert check_memory_claim("Paris is the capital of France.", False) is None
    assert check_memory_claim("You saved 5 euros last week.", False) is None


def test_footer_lists_recalled_memories():
    from messaging_llm_bot.agent.turn import format_footer

    recalled = [
        {"source": "notes", "path": "notes/tea.md"},
        {"source": "conversation", "path": "conversations/c1/2026-03-01.jsonl"},
    ]
    footer = format_footer({"prompt_tokens": 10, "completion_tokens": 2}, 1, 0.5, recalled)
    assert footer.endswith("recalled: notes/tea.md, conversations/c1/2026-03-01.jsonl")
    assert "recalled" not in format_footer({}, 1, 0.5, [])
