"""Schema-constrained answers: the protocol schema, the per-runner format choice and its fallback,
against the loopback fake server (which can reject formats the way llama-cpp-python does)."""

from __future__ import annotations

import json
import logging
import re

import jsonschema
import pytest

from assistant_framework.memory import MemoryService
from assistant_framework.skills import SkillManager
from assistant_framework.stores.facts import FactStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.llm.client import LLMClient
from messaging_llm_bot.llm.structured import (
    JSON_STRING_BODY,
    REPLY_SCHEMA,
    grammar_safe,
    protocol_schema,
    response_format,
)
from messaging_llm_bot.runtime import BackgroundModel
from tests.fakes.chat_server import FakeChatServer

LLAMA_CPP_PYTHON = ("text", "json_object")


def _config(server: FakeChatServer, skills_dir, **runner) -> dict:
    return {
        "llm": {
            "runners": [
                {"name": "fake", "base_url": server.base_url, "model": "fake-model", "timeout_seconds": 10, **runner}
            ],
            "max_skill_rounds": 3,
            "retries_per_runner": 0,
        },
        "runtime": {"timezone": "UTC", "skills_dirs": [str(skills_dir)]},
        "telegram": {"token": ""},
    }


def test_grammar_safe_drops_keywords_that_break_grammars():
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "gone"],
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1},
            "n": {"type": "integer", "minimum": 0},
            "kind": {"const": "x"},
            "tags": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 3},
        },
    }
    assert grammar_safe(schema) == {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "n": {"type": "integer"},
            "kind": {"enum": ["x"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }


def test_protocol_schema_admits_every_skill_call_and_a_reply_only(tmp_path):
    workspace = Workspace(tmp_path / "ws")
    skills = SkillManager.from_config({"runtime": {}}, workspace)
    schema = protocol_schema((n, skills.get(n).args_schema) for n in skills.names())
    jsonschema.validate({"skill": "tasks", "args": {"action": "add", "title": "buy milk", "due": "2026-06-12"}}, schema)
    jsonschema.validate({"skill": "notes", "args": {"action": "list"}}, schema)
    jsonschema.validate({"reply": "Hello"}, schema)
    for bad in (
        {"skill": "nope", "args": {}},
        {"skill": "tasks", "args": {"action": "fly"}},
        {"text": "hi"},
        {"skill": "tasks"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert len(schema["anyOf"]) == len(skills.names()) + 1


def test_auto_falls_back_to_json_object_once_and_remembers(tmp_path, test_skills_dir, caplog, make_agent):
    with FakeChatServer(response_formats=LLAMA_CPP_PYTHON) as server:
        agent = make_agent(_config(server, test_skills_dir), Workspace(tmp_path / "ws"))
        server.enqueue('{"skill": "add", "args": {"a": 2, "b": 3}}', '{"reply": "5"}', '{"reply": "again"}')
        with caplog.at_level(logging.INFO, logger="messaging_llm_bot.llm.structured"):
            first = agent.handle(AgentMessage("c", "what is 2+3?"))
            second = agent.handle(AgentMessage("c", "and again?"))
        assert (first.reply, first.ok, second.reply) == ("5", True, "again")
        kinds = [(r.get("response_format") or {}).get("type") for r in server.chat_requests]
        assert kinds == ["json_schema", "json_object", "json_object", "json_object"]
        schema = server.chat_requests[1]["response_format"]["schema"]
        assert {
            "skill": {"type": "string", "enum": ["add"]},
            "args": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        } in [o["properties"] for o in schema["anyOf"]]
        used = [r.getMessage() for r in caplog.records if "structured output via" in r.getMessage()]
        assert used == ["llm runner 'fake': structured output via response_format json_object"]


def test_schema_request_is_byte_stable_between_turns(tmp_path, test_skills_dir, make_agent):
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir), Workspace(tmp_path / "ws"))
        agent.handle(AgentMessage("c", "one"))
        agent.handle(AgentMessage("c", "two"))
        formats = [json.dumps(r["response_format"]) for r in server.chat_requests]
        assert formats[0] == formats[1] and '"json_schema"' in formats[0]
        marker = b'"response_format"'
        tails = [r.body[r.body.index(marker) :] for r in server.chat_requests]
        assert tails[0] == tails[1]  # the schema is sent after the messages, byte for byte the same


@pytest.mark.parametrize(
    "setting,expected", [("off", [None]), ("json_object", ["json_object"]), ("json_schema", ["json_schema"])]
)
def test_explicit_setting_is_used(tmp_path, test_skills_dir, setting, expected, make_agent):
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir, structured_output=setting), Workspace(tmp_path / "ws"))
        agent.handle(AgentMessage("c", "hi"))
        assert [(r.get("response_format") or {}).get("type") for r in server.chat_requests] == expected


def test_explicit_format_a_server_lacks_falls_back_to_prompted_json(tmp_path, test_skills_dir, make_agent):
    with FakeChatServer(response_formats=LLAMA_CPP_PYTHON) as server:
        agent = make_agent(
            _config(server, test_skills_dir, structured_output="json_schema"), Workspace(tmp_path / "ws")
        )
        server.enqueue("Hello!")
        assert agent.handle(AgentMessage("c", "hi")).reply == "Hello!"
        assert [(r.get("response_format") or {}).get("type") for r in server.chat_requests] == ["json_schema", None]


def test_streamed_reply_object_shows_only_its_text(tmp_path, test_skills_dir, make_agent):
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir), Workspace(tmp_path / "ws"))
        server.enqueue(
            {
                "content": '{"reply": "Hello there, \\"friend\\"!"}',
                "stream_chunks": ['{"', "reply", '": "', "Hello", " there,", ' \\"fr', 'iend\\"!', '"}'],
            }
        )
        deltas: list[str] = []
        result = agent.handle(
            AgentMessage("c", "hi", stream=True, on_event=lambda e: e.kind == "delta" and deltas.append(e.data["text"]))
        )
        assert result.reply == 'Hello there, "friend"!'
        assert deltas and deltas[-1] == result.reply
        assert all("{" not in d and "reply" not in d and '\\"' not in d for d in deltas), deltas


def test_background_extraction_falls_back_instead_of_failing_every_turn(tmp_path):
    with FakeChatServer(response_formats=LLAMA_CPP_PYTHON) as server:
        llm = LLMClient.from_section(
            {"runners": [{"name": "fake", "base_url": server.base_url, "model": "m"}], "retries_per_runner": 0}
        )
        svc = MemoryService(
            Workspace(tmp_path / "ws"), {"memory": {"extract_idle_seconds": 0}}, complete=BackgroundModel(llm)
        )
        try:
            answer = json.dumps({"facts": [{"subject": "user", "attribute": "city", "value": "Porto"}]})
            server.enqueue(answer, answer)
            svc.after_turn("1", "I live in Porto", "Nice")
            assert svc.drain(10)
            svc.after_turn("1", "Still in Porto", "Good")
            assert svc.drain(10)
        finally:
            svc.close()
        kinds = [r["response_format"]["type"] for r in server.chat_requests]
        assert kinds == ["json_schema", "json_object", "json_object"]
        assert "additionalProperties" not in json.dumps(server.chat_requests[1]["response_format"]["schema"])
        assert [f["value"] for f in FactStore(svc.workspace).all()] == ["Porto"]


def test_repeated_call_and_final_round_may_only_reply(tmp_path, test_skills_dir, make_agent):
    with FakeChatServer() as server:
        agent = make_agent(_config(server, test_skills_dir), Workspace(tmp_path / "ws"))
        same = '{"skill": "add", "args": {"a": 1, "b": 2}}'
        server.enqueue(same, same, '{"reply": "3"}')
        assert agent.handle(AgentMessage("c", "1+2?")).reply == "3"
        schemas = [r["response_format"]["json_schema"]["schema"] for r in server.chat_requests]
        assert len(schemas[0]["anyOf"]) > 1 and len(schemas[1]["anyOf"]) > 1
        assert schemas[2] == {"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]}
        server.reset()
        server.enqueue(
            '{"skill": "add", "args": {"a": 1, "b": 1}}',
            '{"skill": "add", "args": {"a": 2, "b": 2}}',
            '{"skill": "add", "args": {"a": 3, "b": 3}}',
            '{"reply": "done"}',
        )
        assert agent.handle(AgentMessage("c", "sums")).reply == "done"  # max_skill_rounds is 3
        kinds = ["anyOf" in r["response_format"]["json_schema"]["schema"] for r in server.chat_requests]
        assert kinds == [True, True, True, False]


def test_json_object_requests_limit_free_strings_to_json_string_text():
    # llama-cpp-python reads `pattern` as the raw text between a string's quotes: the pattern must
    # take every string JSON can write there and nothing JSON forbids (raw newlines, lone quotes).
    body = re.compile(JSON_STRING_BODY)
    for value in ["", "plain", 'say "hi"', "two\nlines\ttab", "back\\slash", "é ü 日本", "\x01\x1f", "emoji 🙂"]:
        for ensure_ascii in (True, False):
            assert body.fullmatch(json.dumps(value, ensure_ascii=ensure_ascii)[1:-1]), value
    for raw in ["two\nlines", 'lone " quote', "bad \\q escape", "trailing \\", "\\u12"]:
        assert not body.fullmatch(raw), raw
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "type": {"type": "string"},
                    "mode": {"type": "string", "enum": ["a"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
            REPLY_SCHEMA,
        ]
    }
    sent = response_format("json_object", schema, "answer")["response_format"]["schema"]
    props = sent["anyOf"][0]["properties"]
    assert (
        props["type"]["pattern"]
        == props["tags"]["items"]["pattern"]
        == sent["anyOf"][1]["properties"]["reply"]["pattern"]
        == JSON_STRING_BODY
    )
    assert "pattern" not in props["mode"] and "pattern" not in json.dumps(
        REPLY_SCHEMA
    )  # enums as they were; input untouched
    # json_schema servers apply `pattern` to the decoded value, where it would forbid quotes and newlines.
    assert "pattern" not in json.dumps(response_format("json_schema", schema, "answer"))


def test_a_format_rejection_is_one_warning_line_and_other_failures_still_warn(
    tmp_path, test_skills_dir, caplog, make_agent
):
    # The terminal chat shows WARNING lines: a server's expected one-time rejection of json_schema
    # must not read as "model call failed" there; a real failure still must.
    with FakeChatServer(response_formats=LLAMA_CPP_PYTHON) as server:
        agent = make_agent(_config(server, test_skills_dir), Workspace(tmp_path / "ws"))
        server.enqueue(
            '{"reply": "hi"}', {"status": 500, "body": {"error": {"message": "boom", "type": "server_error"}}}
        )
        with caplog.at_level(logging.WARNING):
            assert agent.handle(AgentMessage("c", "hello")).reply == "hi"
            warned = [r.getMessage() for r in caplog.records]
            assert warned == [
                "llm runner 'fake' rejects response_format json_schema (HTTP 500); trying the next format"
            ]
            caplog.clear()
            assert not agent.handle(AgentMessage("c", "again")).ok
            assert any(r.getMessage().startswith("model call failed") for r in caplog.records)


def test_format_and_runner_fallback_are_one_loop(tmp_path):
    # Runner "a" rejects json_schema, then fails (503) with json_object: the call goes on to runner
    # "b", which is asked with its own first format; what "a" rejected is remembered for "a" only.
    with FakeChatServer(response_formats=LLAMA_CPP_PYTHON) as a, FakeChatServer() as b:
        llm = LLMClient.from_section(
            {
                "runners": [
                    {"name": "a", "base_url": a.base_url, "model": "m"},
                    {"name": "b", "base_url": b.base_url, "model": "m"},
                ],
                "retries_per_runner": 0,
            }
        )
        a.enqueue({"status": 503})
        b.enqueue('{"reply": "from b"}')
        completion = llm.complete([{"role": "user", "content": "hi"}], schema=REPLY_SCHEMA, schema_name="x")
        assert (completion.runner, completion.text) == ("b", '{"reply": "from b"}')
        assert [r["response_format"]["type"] for r in a.chat_requests] == ["json_schema", "json_object"]
        assert [r["response_format"]["type"] for r in b.chat_requests] == ["json_schema"]
        assert llm.formats.modes(llm.runners[0]) == ["json_object", "off"]
        assert llm.formats.modes(llm.runners[1]) == ["json_schema", "json_object", "off"]


def test_format_memory_belongs_to_the_client(tmp_path):
    # Two clients of one server each learn for themselves (no process-wide table): a client built
    # after /reload asks with json_schema once again, and a test's client is never steered by another's.
    with FakeChatServer(response_formats=LLAMA_CPP_PYTHON) as server:
        config = {"runners": [{"name": "fake", "base_url": server.base_url, "model": "m"}], "retries_per_runner": 0}
        for _ in range(2):
            server.enqueue('{"reply": "ok"}')
            assert (
                LLMClient.from_section(config).complete([{"role": "user", "content": "hi"}], schema=REPLY_SCHEMA).text
            )
        kinds = [r["response_format"]["type"] for r in server.chat_requests]
        assert kinds == ["json_schema", "json_object", "json_schema", "json_object"]
