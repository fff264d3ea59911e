"""Against a real model: llama-cpp-python's server running SmolLM2-135M-Instruct (``make test-model``).

Few model calls on purpose: the 135M model answers a first turn in tens of seconds on 2 cores.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys

import pytest
import requests

from assistant_framework.memory import MemoryService
from assistant_framework.skills import SkillManager
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.choice import shortlist, skill_choice
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.llm.client import LLMClient
from messaging_llm_bot.llm.structured import protocol_schema
from messaging_llm_bot.protocol import parse_model_output
from messaging_llm_bot.runtime import BackgroundModel
from tests.cli_inprocess import run_cli
from tests.console_harness import REPO
from tests.real_model import MODEL_NAME, RealModelServer, free_port
from tests.setup_runs import example_config
from tests.waiting import wait_until

pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def real_server(tmp_path_factory):
    server = RealModelServer(log_path=tmp_path_factory.mktemp("llama") / "server.log")
    server.start()
    yield server
    server.stop()


def test_serve_model_is_a_server_setup_finds_and_takes(tmp_path):
    """``make serve-model`` (``python -m tests.real_model serve PORT``): the model in the foreground, a server
    setup's test turn passes against; Ctrl-C ends it. ``make model-server`` only builds and fetches."""
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        served = subprocess.Popen(
            [sys.executable, "-m", "tests.real_model", "serve", str(port)], cwd=REPO, stdout=out, stderr=out
        )
    try:
        base = f"http://127.0.0.1:{port}/v1"
        wait_until(lambda: _answers(f"{base}/models"), timeout=180, what="the served model")
        assert f"SmolLM2-135M serving at {base}" in log.read_text()
        config, ws = example_config(tmp_path), tmp_path / "ws"
        flags = ("--no-telegram", "--base-url", base, "--timezone", "UTC")
        setup = run_cli("setup", "--yes", "--config", str(config), "--workspace", str(ws), *flags)
        assert setup.returncode == 0, setup.stderr
        assert "Test turn:" in setup.stdout and f"Model: {MODEL_NAME} at {base}." in setup.stdout
    finally:
        served.send_signal(signal.SIGINT)
        assert served.wait(30) == 0, log.read_text()[-2000:]


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _builtin_schema(tmp_path) -> dict:
    skills = SkillManager.from_config({"runtime": {}}, Workspace(tmp_path / "schema-ws"))
    return protocol_schema((n, skills.get(n).args_schema) for n in skills.names())


def test_protocol_schema_compiles_to_a_grammar(tmp_path):
    # llama-cpp-python silently drops the constraint when its converter raises; it must not.
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = json_schema_to_gbnf(json.dumps(_builtin_schema(tmp_path)))
    assert '"\\"tasks\\""' in grammar and "reply" in grammar


def test_json_object_strings_keep_raw_newlines_out(real_server, tmp_path):
    # llama-cpp-python's own string grammar admits raw control characters, which JSON forbids;
    # without the fix, this prompt made the 135M model put raw newlines into its reply.
    from messaging_llm_bot.llm.structured import REPLY_SCHEMA, response_format

    llm = LLMClient.from_section(
        {"runners": [real_server.runner()], "retries_per_runner": 0, "temperature": 0, "max_tokens": 60}
    )
    try:
        messages = [
            {"role": "system", "content": "You are a helpful assistant. Answer with JSON."},
            {"role": "user", "content": "Write a haiku."},
        ]
        text = llm.complete(messages, extra=response_format("json_object", REPLY_SCHEMA, "answer")).text
    finally:
        llm.close()
    assert text.startswith("{") and len(text) > 20, text
    assert not [c for c in text if ord(c) < 0x20], repr(text)  # cut at max_tokens or not: no raw control char


def _config(real_server, **runner) -> dict:
    return {
        "llm": {
            "runners": [real_server.runner(**runner)],
            "max_skill_rounds": 2,
            "retries_per_runner": 0,
            "temperature": 0,
            "max_tokens": 120,
        },
        "runtime": {"timezone": "UTC"},
        "memory": {"enabled": False},
        "policy": {"capabilities": {"write": "allow"}},
    }


def test_constrained_turn_gives_a_protocol_object_and_a_clean_reply(real_server, tmp_path, make_agent):
    agent = make_agent(_config(real_server, skill_choice="direct"), Workspace(tmp_path / "ws"))
    deltas: list[str] = []
    result = agent.handle(
        AgentMessage(
            "t",
            "add a task: buy milk tomorrow",
            stream=True,
            on_event=lambda e: e.kind == "delta" and deltas.append(e.data["text"]),
        )
    )
    assert result.ok, result.reply
    # The server takes json_object with a schema, not json_schema: auto found that out.
    assert agent.llm.formats.modes(agent.llm.runners[0])[0] == "json_object"
    for request in agent.traces.load(result.trace_id)["requests"]:
        value = json.loads(request["text"])  # every raw model output is one JSON object...
        assert parse_model_output(request["text"], agent.skills.names()).calls or set(value) == {
            "reply"
        }  # ...of the protocol
    assert not result.reply.lstrip().startswith("{") and '"skill"' not in result.reply
    assert all("{" not in d for d in deltas)


@pytest.mark.parametrize(
    "message",
    ["Remind me in 20 minutes to take the laundry out.", "Add a task: renew the car insurance.", "Hi! How are you?"],
)
def test_two_step_names_a_matched_skill_then_fills_its_schema(real_server, tmp_path, message, make_agent):
    agent = make_agent(_config(real_server), Workspace(tmp_path / "ws"))  # smollm2-135m: skill_choice auto is two_step
    assert skill_choice(agent.llm.runners[0]) == "two_step"
    result = agent.handle(AgentMessage("t", message))
    assert result.ok, result.reply
    requests = agent.traces.load(result.trace_id)["requests"]
    first = json.loads(requests[0]["text"])  # a name the message matches, or a reply
    matched = shortlist(message, agent._choices._formats(agent.skills)[0])
    assert (set(first) == {"skill"} and first["skill"] in matched) or set(first) == {"reply"}, first
    if "skill" in first:
        args = requests[1]
        assert args["messages"][:-2] == requests[0]["messages"]  # the arguments request extends the choice
        assert isinstance(json.loads(args["text"]), dict)
        assert agent.skills.validate_args(first["skill"], json.loads(args["text"])) is None, args["text"]
    assert not result.reply.lstrip().startswith("{") and '"skill"' not in result.reply


def test_every_args_grammar_compiles(tmp_path):
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from messaging_llm_bot.llm.structured import args_grammar, choice_schema, strict_strings

    skills = SkillManager.from_config({"runtime": {}}, Workspace(tmp_path / "ws"))
    assert '"\\"tasks\\""' in json_schema_to_gbnf(json.dumps(strict_strings(choice_schema(skills.names()))))
    for name in skills.names():
        assert "root" in json_schema_to_gbnf(json.dumps(strict_strings(args_grammar(skills.get(name).args_schema))))


def test_background_extraction_uses_the_format_the_server_takes(real_server, tmp_path, caplog):
    llm = LLMClient.from_section(
        {"runners": [real_server.runner()], "retries_per_runner": 0, "temperature": 0, "max_tokens": 120}
    )
    svc = MemoryService(
        Workspace(tmp_path / "ws"), {"memory": {"extract_idle_seconds": 0}}, complete=BackgroundModel(llm)
    )
    try:
        with caplog.at_level(logging.WARNING):
            svc.after_turn("1", "My sister Ann lives in Porto.", "Nice, Porto is lovely.")
            assert svc.drain(600)
        assert not [r for r in caplog.records if "fact extraction for 1 failed" in r.getMessage()]
        assert llm.formats.modes(llm.runners[0])[0] == "json_object"
    finally:
        svc.close()
        llm.close()


@pytest.fixture(scope="module")
def tools_server(tmp_path_factory):
    """The same server with the chat format that honours ``tools`` (llama-cpp-python's function calling)."""
    server = RealModelServer(
        log_path=tmp_path_factory.mktemp("llama-tools") / "server.log", chat_format="chatml-function-calling"
    )
    server.start()
    yield server
    server.stop()


def test_native_tool_specs_and_tool_turns_are_accepted_by_a_server_that_honours_tools(tools_server, tmp_path):
    # The reminders skill's real args schema has a `pattern`; sent as is, it broke this server's
    # grammar and stopped the process. An assistant turn with `content: null` got HTTP 500.
    from messaging_llm_bot.llm.tools import ToolCall, assistant_message, result_message, tool_specs

    skills = SkillManager.from_config({"runtime": {}}, Workspace(tmp_path / "schema-ws"))
    reminders = skills.get("reminders")
    assert "pattern" in json.dumps(reminders.args_schema)
    tools = tool_specs([(reminders.name, reminders.description, reminders.args_schema)])
    llm = LLMClient.from_section(
        {"runners": [tools_server.runner()], "retries_per_runner": 0, "temperature": 0, "max_tokens": 60}
    )
    try:
        question = [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Which reminders do I have?"},
        ]
        first = llm.complete(question, extra={"tools": tools, "tool_choice": "auto"})
        assert first.raw["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")
        call = ToolCall(id="call_1", name="reminders", arguments='{"action": "list"}')
        turn = question + [assistant_message("", [call]), result_message(call, '{"reminders": []}')]
        second = llm.complete(turn, extra={"tools": tools, "tool_choice": "auto"})
        assert second.raw["choices"][0]["finish_reason"] in ("stop", "length", "tool_calls")
    finally:
        llm.close()
