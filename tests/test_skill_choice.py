"""skill_choice two_step: the skill's name first (constrained to the names), its arguments next with
that skill's schema alone, every request extending the previous one; through the agent against the
fake model server, and the built-in eval against an ideal fake model in both protocols."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from assistant_framework.config.settings import Settings
from assistant_framework.evals.cases import BUILTIN_CASES_DIR, load_cases
from assistant_framework.skills import SkillManager
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.choice import call_from_args, chosen_skill, model_billions, shortlist, skill_choice
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.agent.loop import Agent, AgentEvent
from messaging_llm_bot.evals.runner import run_cases
from messaging_llm_bot.llm.client import LLMClient
from messaging_llm_bot.llm.runners import RunnerConfig, runners_from_config
from messaging_llm_bot.llm.structured import args_grammar
from messaging_llm_bot.protocol import parse_model_output
from messaging_llm_bot.protocol.messages import ARGS_REQUEST_LEAD
from tests.cli_inprocess import run_cli
from tests.fakes.ideal_model import ideal_handler

FIXED = datetime(2026, 3, 3, 13, 5, 42, tzinfo=timezone.utc)
ROOT = Path(__file__).resolve().parent.parent


def two_step_config(bot_config: dict, **runner) -> dict:
    config = json.loads(json.dumps(bot_config))
    config["llm"]["runners"][0].update({"skill_choice": "two_step", **runner})
    config["policy"] = {"capabilities": {"write": "allow"}}
    return config


def make_agent(config, workspace) -> Agent:
    settings = Settings.from_config(config)
    return Agent(
        settings,
        workspace,
        SkillManager.from_config(config, workspace, settings=settings),
        LLMClient.from_section(config["llm"]),
        clock=lambda: FIXED,
    )


def schema_of(request: dict) -> dict:
    fmt = request["response_format"]
    return fmt["json_schema"]["schema"] if fmt["type"] == "json_schema" else fmt["schema"]


def messages_json(request: dict) -> str:
    """The request's messages as the client serialised them, without the closing bracket."""
    return json.dumps(request["messages"])[:-1]


# ------------------------------------------------------------------ choosing the protocol


@pytest.mark.parametrize(
    ("model", "billions"),
    [
        ("smollm2-135m", 0.135),
        ("SmolLM2-360M-Instruct-Q8_0.gguf", 0.36),
        ("qwen2.5:0.5b", 0.5),
        ("Qwen/Qwen2.5-1.5B-Instruct", 1.5),
        ("llama3.2:3b-instruct-q4_K_M", 3.0),
        ("qwen3:4b", 4.0),
        ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", 8.0),
        ("mixtral-8x7b", 56.0),
        ("qwen3-30b-a3b", 30.0),
        ("gpt-4o", None),
        ("claude-sonnet-4-5", None),
        ("granite4:micro", None),
    ],
)
def test_model_size_is_read_from_the_name(model, billions):
    assert model_billions(model) == (pytest.approx(billions) if billions is not None else None)


def runner(model: str, **fields) -> RunnerConfig:
    return RunnerConfig(name="r", base_url="http://127.0.0.1:9/v1", model=model, **fields)


def test_auto_is_two_step_for_small_models_only_and_never_with_native_tools():
    assert skill_choice(runner("smollm2-135m")) == "two_step"
    assert skill_choice(runner("qwen2.5:0.5b")) == "two_step"
    assert skill_choice(runner("llama3.2:3b")) == "direct"  # unmeasured: the protocol it had
    assert skill_choice(runner("gpt-4o")) == "direct"  # no size in the name: the protocol big models get
    assert skill_choice(runner("smollm2-135m", tool_transport="auto")) == "direct"
    assert skill_choice(runner("gpt-4o", skill_choice="two_step")) == "two_step"
    assert skill_choice(runner("smollm2-135m", skill_choice="direct")) == "direct"


def test_config_errors_name_the_runner_and_key(tmp_path):
    base = {"name": "small", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    with pytest.raises(ValueError, match=r"llm.runners\[0\].skill_choice: .*must be one of"):
        runners_from_config({"runners": [{**base, "skill_choice": "twostep"}]})
    with pytest.raises(ValueError, match=r"skill_choice: two_step needs tool_transport json, not 'native'"):
        runners_from_config({"runners": [{**base, "skill_choice": "two_step", "tool_transport": "native"}]})
    (tmp_path / "llm.json").write_text(
        json.dumps({"runners": [{**base, "skill_choice": "two_step", "tool_transport": "native"}]})
    )
    done = run_cli("config", "validate", "--config", str(tmp_path), cwd=ROOT)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "llm.json" in done.stderr and "skill_choice" in done.stderr and "two_step needs" in done.stderr


@pytest.mark.parametrize(
    ("text", "chosen"),
    [
        ('{"skill": "notes"}', "notes"),
        ('{"skill": "notes", "args": {}}', "notes"),
        ('```json\n{"skill": "notes", "reason": "a note"}\n```', "notes"),
        ('{"skill": "notes", "args": {"action": "list"}}', None),  # a whole call: it runs as it is
        ('{"skill": "nope"}', None),  # unknown: the loop says so
        ('{"skill": "notes", "action": "list"}', None),  # flat arguments: a whole call
        ('{"reply": "hi"}', None),
        ("hello", None),
    ],
)
def test_chosen_skill(text, chosen):
    assert chosen_skill(parse_model_output(text, ["notes", "tasks"]), ["notes", "tasks"]) == chosen


def test_call_from_args_reads_an_object_or_a_whole_call_and_flags_anything_else():
    assert call_from_args("notes", '{"action": "list"}').args == {"action": "list"}
    assert call_from_args("notes", '{"skill": "notes", "args": {"action": "list"}}').args == {"action": "list"}
    bad = call_from_args("notes", "I would list the notes.")
    assert bad.args == {} and "not one JSON object" in bad.args_error


# ------------------------------------------------------------------ through the agent


def test_two_step_asks_the_name_then_the_arguments_with_that_schema_alone(bot_config, workspace, chat_server):
    config = two_step_config(bot_config)
    agent = make_agent(config, workspace)
    chat_server.enqueue(
        '{"skill": "save_note"}', '{"name": "milk", "text": "buy oat milk"}', '{"reply": "Saved your note."}'
    )
    result = agent.handle(AgentMessage("c1", "note that I need oat milk"))
    assert result.ok and result.reply.startswith("Saved your note.")
    assert workspace.read_text("notes/milk.md") == "buy oat milk"
    assert [c.skill for c in result.skill_calls] == ["save_note"] and result.rounds == 2  # a round: name + args
    choice, args, answer = chat_server.chat_requests
    # The choice: one of the skills the message matches (the word "note": save_note, read_note and
    # the built-in notes), or a reply; nothing of any argument schema, in the grammar or the prompt.
    assert schema_of(choice) == {
        "anyOf": [
            {
                "type": "object",
                "properties": {"skill": {"type": "string", "enum": ["save_note", "read_note", "notes"]}},
                "required": ["skill"],
            },
            {"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]},
        ]
    }
    system = choice["messages"][0]["content"]
    assert "- save_note: Save a note to notes/<name>.md\n" in system
    assert '"properties"' not in system and "args:" not in system
    # The arguments: the choice request extended by the choice and one request naming that skill's schema.
    assert args["messages"][:-2] == choice["messages"]
    assert args["messages"][-2] == {"role": "assistant", "content": '{"skill": "save_note"}'}
    ask = args["messages"][-1]["content"]
    assert ask.startswith(ARGS_REQUEST_LEAD + "save_note (Save a note") and '"pattern":"^[a-z]+$"' in ask
    assert schema_of(args) == args_grammar(agent.skills.get("save_note").args_schema)
    # The answer after the result extends both: every request is a prefix of the next, byte for byte.
    assert answer["messages"][: len(args["messages"])] == args["messages"]
    assert "Result of skill 'save_note'" in answer["messages"][-1]["content"]
    for earlier, later in ((choice, args), (args, answer)):
        assert later.body.decode().startswith(earlier.body.decode()[: len(b'{"model": "fake-model", ') - 1])
        assert messages_json(later).startswith(messages_json(earlier))
        assert later.body.decode().find(messages_json(earlier)) == earlier.body.decode().find(messages_json(earlier))


def test_two_step_system_message_is_byte_identical_across_turns(bot_config, workspace, chat_server):
    agent = make_agent(two_step_config(bot_config), workspace)
    chat_server.enqueue('{"skill": "add"}', '{"a": 2, "b": 3}', '{"reply": "5"}', '{"reply": "Hello!"}')
    agent.handle(AgentMessage("c1", "2+3?"))
    agent.handle(AgentMessage("c1", "hi"))
    requests = chat_server.chat_requests
    assert len(requests) == 4
    assert len({r["messages"][0]["content"] for r in requests}) == 1
    # The second turn starts with the first turn's system message and its stored pair.
    assert requests[3]["messages"][1:3] == [
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": "5"},
    ]


def test_two_step_reply_takes_one_request_and_a_message_matching_no_skill_admits_only_a_reply(
    bot_config, workspace, chat_server
):
    agent = make_agent(two_step_config(bot_config), workspace)
    chat_server.enqueue('{"reply": "Hi there!"}')
    result = agent.handle(AgentMessage("c1", "hi"))
    assert result.ok and result.reply == "Hi there!" and result.skill_calls == []
    assert len(chat_server.chat_requests) == 1
    assert schema_of(chat_server.chat_requests[0]) == {
        "type": "object",
        "properties": {"reply": {"type": "string"}},
        "required": ["reply"],
    }


@pytest.mark.parametrize(
    ("message", "first"),
    [
        ("Remind me in 20 minutes to call Jo.", "reminders"),
        ("Put batteries on my to-do list", "tasks"),
        ("What's the phone number of Jo?", "contacts"),
        ("Thanks, that was helpful.", None),
    ],
)
def test_shortlist_ranks_the_skills_a_message_names(message, first, tmp_path):
    catalog = SkillManager.from_config({"runtime": {}}, Workspace(tmp_path)).catalog()
    docs = [(e["name"], f"{e['name']} {e['description']}") for e in catalog]
    found = shortlist(message, docs)
    assert (found[0] if found else None) == first and len(found) <= 3


def test_two_step_whole_call_runs_without_asking_its_arguments(bot_config, workspace, chat_server):
    agent = make_agent(two_step_config(bot_config, structured_output="off"), workspace)
    chat_server.enqueue('{"skill": "add", "args": {"a": 2, "b": 2}}', '{"reply": "Four."}')
    result = agent.handle(AgentMessage("c1", "2+2"))
    assert result.ok and result.reply == "Four." and result.skill_calls[0].ok
    assert len(chat_server.chat_requests) == 2
    assert not any(ARGS_REQUEST_LEAD in m["content"] for m in chat_server.chat_requests[1]["messages"])


def test_two_step_arguments_that_are_not_json_run_nothing_and_are_fed_back(bot_config, workspace, chat_server):
    agent = make_agent(two_step_config(bot_config), workspace)
    chat_server.enqueue('{"skill": "save_note"}', "I would save it.", '{"reply": "Sorry, that failed."}')
    result = agent.handle(AgentMessage("c1", "note that I need oat milk"))
    assert result.reply.startswith("Sorry, that failed.")
    assert workspace.list("notes/*") == []
    assert result.skill_calls[0].error_kind == "invalid_args"
    feedback = chat_server.chat_requests[2]["messages"][-1]["content"]
    assert "Skill call 'save_note' was not run" in feedback and "not one JSON object" in feedback


def test_two_step_streaming_never_shows_the_choice(bot_config, workspace, chat_server):
    agent = make_agent(two_step_config(bot_config), workspace)
    chat_server.enqueue('{"skill": "add"}', '{"a": 2, "b": 2}', '{"reply": "Two and two make four."}')
    events: list[AgentEvent] = []
    result = agent.handle(AgentMessage("c1", "2+2", stream=True, on_event=events.append))
    assert result.ok and result.reply == "Two and two make four."
    deltas = [e.data["text"] for e in events if e.kind == "delta"]
    assert deltas and deltas[-1] == "Two and two make four."
    assert all("skill" not in d and "{" not in d for d in deltas)


def test_big_model_keeps_the_direct_protocol_and_native_tools_are_unaffected(bot_config, workspace, chat_server):
    config = json.loads(json.dumps(bot_config))
    config["llm"]["runners"][0]["model"] = "qwen3:32b"  # skill_choice auto
    agent = make_agent(config, workspace)
    agent.handle(AgentMessage("c1", "hi"))
    request = chat_server.chat_requests[-1]
    assert '"properties"' in request["messages"][0]["content"]
    assert any("args" in option.get("properties", {}) for option in schema_of(request)["anyOf"])
    config["llm"]["runners"][0].update(model="smollm2-135m", tool_transport="native")
    make_agent(config, workspace).handle(AgentMessage("c2", "hi"))
    request = chat_server.chat_requests[-1]
    assert "tools" in request and "response_format" not in request
    assert '"properties"' in request["messages"][0]["content"]


# ------------------------------------------------------------------ the built-in eval, ideal model


@pytest.mark.slow(reason="every built-in eval case, through the real agent, in both protocols (about 15 s idle)")
def test_every_builtin_case_passes_with_an_ideal_model_in_both_protocols(chat_server):
    cases = load_cases([BUILTIN_CASES_DIR])
    chat_server.set_handler(ideal_handler(cases))
    passed = {}
    for choice in ("direct", "two_step"):
        llm = {
            "runners": [{"name": "ideal", "base_url": chat_server.base_url, "model": "ideal", "skill_choice": choice}],
            "max_skill_rounds": 3,
            "retries_per_runner": 0,
        }
        results = run_cases(cases, {"llm": llm, "runtime": {"timezone": "UTC"}})
        passed[choice] = {r.id for r in results if r.passed}
        failed = {r.id: r.problems for r in results if not r.passed}
        assert not failed, (choice, failed)
    assert passed["direct"] == passed["two_step"] == {c.id for c in cases}
