"""Native tool calls (tool_transport native/auto) against the loopback fake server."""

from __future__ import annotations

import json

import pytest

from assistant_framework.skills import SkillManager
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.incoming import AgentMessage
from tests.fakes.chat_server import FakeChatServer

TWO_CALLS = [
    {"id": "call_a", "name": "add", "arguments": {"a": 2, "b": 3}},
    {"id": "call_b", "name": "add", "arguments": '{"a": 10, "b": 1}'},
]


def _config(server, skills_dir, transport: str) -> dict:
    return {
        "llm": {
            "runners": [
                {
                    "name": "fake",
                    "base_url": server.base_url,
                    "model": "m",
                    "timeout_seconds": 10,
                    "tool_transport": transport,
                }
            ],
            "max_skill_rounds": 3,
            "retries_per_runner": 0,
        },
        "runtime": {"timezone": "UTC", "skills_dirs": [str(skills_dir)]},
    }


@pytest.mark.parametrize("stream", [False, True])
def test_native_tool_calls_run_and_results_go_back_as_tool_messages(tmp_path, test_skills_dir, stream, make_agent):
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "native"), Workspace(tmp_path / "ws"))
        server.enqueue({"tool_calls": TWO_CALLS}, "5 and 11.")
        result = agent.handle(AgentMessage("c", "add 2+3 and 10+1", stream=stream))
        assert (result.reply, result.ok) == ("5 and 11.", True)
        assert [(c.skill, c.args, c.ok) for c in result.skill_calls] == [
            ("add", {"a": 2, "b": 3}, True),
            ("add", {"a": 10, "b": 1}, True),
        ]
        first, second = server.chat_requests
        assert {t["function"]["name"] for t in first["tools"]} >= {"add", "save_note"}
        assert "response_format" not in first
        sent = second["messages"]
        assert [c["id"] for c in sent[-3]["tool_calls"]] == ["call_a", "call_b"]
        assert isinstance(
            sent[-3]["content"], str
        )  # never null: llama-cpp-python rejects it (tests/test_real_model.py)
        assert [(m["role"], m["tool_call_id"]) for m in sent[-2:]] == [("tool", "call_a"), ("tool", "call_b")]
        assert '"sum": 5' in sent[-2]["content"] and '"sum": 11' in sent[-1]["content"]


def test_auto_falls_back_to_the_json_protocol_when_tools_are_rejected(tmp_path, test_skills_dir, make_agent):
    with FakeChatServer(tools_supported=False) as server:
        agent = make_agent(_config(server, test_skills_dir, "auto"), Workspace(tmp_path / "ws"))
        server.enqueue('{"skill": "add", "args": {"a": 1, "b": 1}}', '{"reply": "2"}', '{"reply": "again"}')
        assert agent.handle(AgentMessage("c", "1+1?")).reply == "2"
        assert agent.handle(AgentMessage("c", "again")).reply == "again"
        sent = [("tools" in r, (r.get("response_format") or {}).get("type")) for r in server.chat_requests]
        assert sent == [(True, None), (False, "json_schema"), (False, "json_schema"), (False, "json_schema")]


def test_auto_reads_a_protocol_call_written_as_text(tmp_path, test_skills_dir, make_agent):
    # llama-cpp-python with a plain chat format accepts `tools` and answers with text.
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "auto"), Workspace(tmp_path / "ws"))
        server.enqueue('{"skill": "add", "args": {"a": 4, "b": 4}}', "8.")
        result = agent.handle(AgentMessage("c", "4+4?"))
        assert result.reply == "8." and result.skill_calls[0].args == {"a": 4, "b": 4}
        assert all("tools" in r for r in server.chat_requests)
        assert server.chat_requests[1]["messages"][-1]["role"] == "user"  # a text call's result is a user message


def test_json_transport_sends_no_tools(tmp_path, test_skills_dir, make_agent):
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "json"), Workspace(tmp_path / "ws"))
        agent.handle(AgentMessage("c", "hi"))
        assert "tools" not in server.chat_requests[0]
        assert json.loads(server.chat_requests[0].body)["response_format"]["type"] == "json_schema"


def test_tool_parameters_are_the_grammar_safe_schema_and_keep_descriptions():
    from messaging_llm_bot.llm.tools import tool_specs

    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["action"],
        "properties": {
            "action": {"type": "string", "const": "add", "description": "what to do"},
            "at": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\d", "format": "date-time", "description": "when"},
            "minutes": {"type": "integer", "minimum": 1},
        },
    }
    (spec,) = tool_specs([("reminders", "Timed reminders", schema)])
    assert spec["function"]["parameters"] == {
        "type": "object",
        "required": ["action"],
        "properties": {
            "action": {"type": "string", "enum": ["add"], "description": "what to do"},
            "at": {"type": "string", "description": "when"},
            "minutes": {"type": "integer"},
        },
    }
    assert schema["properties"]["at"]["pattern"]  # the skill's own schema is untouched
    (empty,) = tool_specs([("time", "", None)])
    assert empty["function"] == {
        "name": "time",
        "description": "time",
        "parameters": {"type": "object", "properties": {}},
    }


def test_auto_answers_with_the_json_protocol_when_the_tools_make_the_prompt_too_long(
    tmp_path, test_skills_dir, make_agent
):
    too_long = {
        "status": 400,
        "body": {
            "error": {
                "message": "This model's maximum context length is 4096 tokens. However, you requested 6874 tokens "
                "(6074 in the messages, 800 in the completion).",
                "type": "invalid_request_error",
            }
        },
    }
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "auto"), Workspace(tmp_path / "ws"))
        server.enqueue(too_long, '{"reply": "fine"}', "also fine")
        assert agent.handle(AgentMessage("c", "hello")).reply == "fine"
        assert agent.handle(AgentMessage("c", "again")).reply == "also fine"  # tools are tried again next time
        sent = [("tools" in r, (r.get("response_format") or {}).get("type")) for r in server.chat_requests]
        assert sent == [(True, None), (False, "json_schema"), (True, None)]


def test_native_transport_reports_a_prompt_too_long_with_tools(tmp_path, test_skills_dir, make_agent):
    too_long = {"status": 400, "body": {"error": {"message": "This model's maximum context length is 4096 tokens."}}}
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "native"), Workspace(tmp_path / "ws"))
        server.enqueue(too_long)
        result = agent.handle(AgentMessage("c", "hello"))
        assert not result.ok and "too long" in result.reply
        assert len(server.chat_requests) == 1 and "tools" in server.chat_requests[0]


@pytest.mark.parametrize("labels", ["zero", "none"])
def test_streamed_calls_that_share_or_lack_an_index_stay_separate_calls(tmp_path, test_skills_dir, labels, make_agent):
    # Ollama labels every streamed call index 0 (each with its own id); Gemini's endpoint sends no index.
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "native"), Workspace(tmp_path / "ws"))
        server.enqueue({"tool_calls": TWO_CALLS, "tool_index": labels}, "5 and 11.")
        result = agent.handle(AgentMessage("c", "add 2+3 and 10+1", stream=True))
        assert (result.reply, result.ok) == ("5 and 11.", True)
        assert [(c.skill, c.args, c.ok) for c in result.skill_calls] == [
            ("add", {"a": 2, "b": 3}, True),
            ("add", {"a": 10, "b": 1}, True),
        ]
        sent = server.chat_requests[1]["messages"]
        assert [c["id"] for c in sent[-3]["tool_calls"]] == ["call_a", "call_b"]
        assert [(m["role"], m["tool_call_id"]) for m in sent[-2:]] == [("tool", "call_a"), ("tool", "call_b")]


def test_a_name_repeated_in_every_streamed_delta_is_the_name_once(tmp_path, test_skills_dir, make_agent):
    # MiniMax M2.7 on NVIDIA NIM sends the whole name again with each arguments piece.
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "native"), Workspace(tmp_path / "ws"))
        server.enqueue({"tool_calls": TWO_CALLS, "tool_name_each_delta": True}, "5 and 11.")
        result = agent.handle(AgentMessage("c", "add 2+3 and 10+1", stream=True))
        assert [(c.skill, c.args, c.ok) for c in result.skill_calls] == [
            ("add", {"a": 2, "b": 3}, True),
            ("add", {"a": 10, "b": 1}, True),
        ]
        assert [c["function"]["name"] for c in server.chat_requests[1]["messages"][-3]["tool_calls"]] == ["add", "add"]


@pytest.mark.parametrize("stream", [False, True])
def test_the_reasoning_of_a_tool_call_answer_goes_back_with_it(tmp_path, test_skills_dir, stream, make_agent):
    # DeepSeek's thinking mode answers HTTP 400 when an assistant turn with tool_calls comes back without it.
    with FakeChatServer(reasoning_back=True) as server:
        agent = make_agent(_config(server, test_skills_dir, "native"), Workspace(tmp_path / "ws"))
        server.enqueue(
            {"tool_calls": TWO_CALLS[:1], "reasoning": "2+3, use add"}, {"content": "5.", "reasoning": "done"}
        )
        result = agent.handle(AgentMessage("c", "add 2+3", stream=stream))
        assert (result.reply, result.ok) == ("5.", True)
        assert [c.skill for c in result.skill_calls] == ["add"]
        back = server.chat_requests[1]["messages"][-2]
        assert back["tool_calls"][0]["id"] == "call_a" and back["reasoning_content"] == "2+3, use add"


def test_reasoning_goes_back_in_the_field_the_server_used(tmp_path, test_skills_dir, make_agent):
    # Ollama and vLLM name it `reasoning`; nothing is sent back for a <think> block the content held.
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "native"), Workspace(tmp_path / "ws"))
        server.enqueue(
            {"tool_calls": TWO_CALLS[:1], "reasoning": "use add", "reasoning_field": "reasoning"},
            {
                "tool_calls": [{"id": "call_c", "name": "add", "arguments": {"a": 1, "b": 1}}],
                "content": "<think>again</think>",
            },
            "done",
        )
        agent.handle(AgentMessage("c", "add 2+3 then 1+1"))
        first, second = (m for m in server.chat_requests[2]["messages"] if m.get("tool_calls"))
        assert first["reasoning"] == "use add" and "reasoning_content" not in first
        assert not {"reasoning", "reasoning_content"} & set(second)


@pytest.mark.parametrize("stream", [False, True])
def test_arguments_encoded_twice_run_as_their_object(tmp_path, test_skills_dir, stream, make_agent):
    # Granite 4 on vLLM's hermes parser: the arguments string decodes to another JSON string (vllm#54964).
    twice = json.dumps(json.dumps({"a": 2, "b": 3}))
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, "native"), Workspace(tmp_path / "ws"))
        server.enqueue({"tool_calls": [{"id": "call_a", "name": "add", "arguments": twice}]}, "5.")
        result = agent.handle(AgentMessage("c", "add 2+3", stream=stream))
        assert result.reply == "5."
        assert [(c.skill, c.args, c.ok) for c in result.skill_calls] == [("add", {"a": 2, "b": 3}, True)]


def test_a_skill_name_servers_refuse_as_a_function_name_is_offered_in_their_form_and_mapped_back():
    """OpenAI-style servers take function names of ``[a-zA-Z0-9_-]`` only: ``my.notes`` goes out as
    ``my_notes``, and a call to ``my_notes`` runs ``my.notes``."""
    from messaging_llm_bot.agent.native import skill_calls
    from messaging_llm_bot.llm.tools import ToolCall, tool_specs

    [spec] = tool_specs([("my.notes", "Notes of mine", {"type": "object", "properties": {"q": {"type": "string"}}})])
    assert spec["function"]["name"] == "my_notes"
    [call] = skill_calls([ToolCall("c1", "my_notes", '{"q": "milk"}')], ["my.notes", "tasks"])
    assert call.skill == "my.notes" and call.args == {"q": "milk"} and call.args_error is None
    [plain] = skill_calls([ToolCall("c2", "tasks", "{}")], ["my.notes", "tasks"])
    assert plain.skill == "tasks"


def test_a_skill_whose_name_a_model_cannot_write_back_is_a_load_error_with_a_suggestion(tmp_path):
    folder = tmp_path / "skills" / "buecher"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        'NAME = "bücher liste"\nDESCRIPTION = "Books"\ndef run(workspace, args, context=None):\n    return "ok"\n'
    )
    (folder / "README.md").write_text("# bücher\n\n## What it does\n\nBooks.\n")
    manager = SkillManager([tmp_path / "skills"], Workspace(tmp_path / "ws"))
    manager.ensure_loaded()
    assert "bücher liste" not in manager.names()
    [error] = manager.errors
    assert "must be ASCII letters" in error.error and "'bucher_liste'" in error.error
