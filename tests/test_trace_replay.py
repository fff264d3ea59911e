"""Trace replay and export-cases against recorded traces in a temporary workspace."""

from __future__ import annotations

from datetime import datetime, timezone

import jsonschema

from assistant_framework.evals.cases import CASE_SCHEMA
from assistant_framework.skills import SkillManager
from assistant_framework.traces import TraceStore
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.evals.replay import compare_actions, export_cases, format_replay, replay_trace
from messaging_llm_bot.llm.client import LLMClient

FIXED = datetime(2026, 3, 3, 13, 5, tzinfo=timezone.utc)


def record_turns(make_agent, bot_config, workspace, chat_server) -> list[dict]:
    """Answer three messages for real so the workspace holds three traces."""
    agent = make_agent(bot_config, workspace, clock=lambda: FIXED)
    chat_server.enqueue(
        '{"skill": "add", "args": {"a": 2, "b": 3}}',
        '{"reply": "5"}',
        '{"skill": "save_note", "args": {"name": "milk", "text": "buy milk"}}',
        '{"reply": "Saved."}',
        '{"reply": "Hello!"}',
    )
    for text in ("what is 2+3?", "note: buy milk", "hi"):
        assert agent.handle(AgentMessage("c1", text)).ok
    store = TraceStore(workspace)
    return [store.load(i) for i in store.ids()]


def test_compare_actions() -> None:
    def call(skill, **args):
        return {"calls": [{"skill": skill, "args": args}], "reply": None}

    assert compare_actions(call("add", a=1), call("add", a=1)) == "same"
    assert compare_actions(call("notes", title="Milk "), call("notes", title="milk")) == "same"
    assert compare_actions(call("add", a=1), call("add", a=2)) == "args differ"
    assert compare_actions(call("add", a=1), {"calls": [], "reply": "hi"}) == "changed"
    assert compare_actions({"calls": [], "reply": "a"}, {"calls": [], "reply": "b"}) == "same"


def test_replay_reports_same_differ_and_changed(bot_config, workspace, chat_server, make_agent) -> None:
    traces = record_turns(make_agent, bot_config, workspace, chat_server)
    assert [t["user_text"] for t in traces] == ["what is 2+3?", "note: buy milk", "hi"]
    names = SkillManager.from_config(bot_config, workspace).names()
    llm = LLMClient.from_section(bot_config["llm"])
    before = len(chat_server.chat_requests)
    chat_server.enqueue(
        '```json\n{"skill": "add", "args": {"a": 2, "b": 3}}\n```',  # same, even with drift
        '{"skill": "save_note", "args": {"name": "milk", "text": "oat milk"}}',  # args differ
        '{"skill": "add", "args": {"a": 0, "b": 0}}',  # changed: called a skill instead of replying
    )
    outcomes = [o for t in traces for o in replay_trace(t, llm, names)]
    assert [o.verdict for o in outcomes] == ["same", "args differ", "changed"]
    # The exact recorded request was re-sent.
    resent = chat_server.chat_requests[before]
    assert resent["messages"] == traces[0]["requests"][0]["messages"]
    table = format_replay(outcomes)
    assert "1 args differ, 1 changed, 1 same" in table
    assert "add(a=2, b=3)" in table


def test_replay_with_current_system_prompt(bot_config, workspace, chat_server, make_agent) -> None:
    traces = record_turns(make_agent, bot_config, workspace, chat_server)
    llm = LLMClient.from_section(bot_config["llm"])
    before = len(chat_server.chat_requests)
    chat_server.enqueue('{"reply": "5"}')
    replay_trace(traces[0], llm, ["add"], system_prompt="NEW SYSTEM PROMPT")
    sent = chat_server.chat_requests[before]["messages"]
    assert sent[0] == {"role": "system", "content": "NEW SYSTEM PROMPT"}
    assert sent[1:] == traces[0]["requests"][0]["messages"][1:]


def test_export_cases_from_traces(bot_config, workspace, chat_server, make_agent) -> None:
    traces = record_turns(make_agent, bot_config, workspace, chat_server)
    cases = export_cases(traces)
    assert [c["expect"]["skill"] for c in cases] == ["add", "save_note", None]
    assert cases[0]["message"] == "what is 2+3?"
    assert cases[0]["expect"]["args"] == {"a": 2, "b": 3}
    for case in cases:  # each is a valid eval case
        jsonschema.validate(case, CASE_SCHEMA)


def test_replay_and_export_cli(bot_config, workspace, chat_server, tmp_path, capsys, make_agent) -> None:
    import json

    import yaml

    from messaging_llm_bot.cli.main import main

    record_turns(make_agent, bot_config, workspace, chat_server)
    config_dir = tmp_path / "cfg"
    config_dir.mkdir()
    for section in ("llm", "runtime"):
        (config_dir / f"{section}.json").write_text(json.dumps(bot_config[section]))
    chat_server.enqueue('{"skill": "add", "args": {"a": 2, "b": 3}}', '{"reply": "Hi!"}')
    code = main(
        [
            "trace",
            "replay",
            "--last",
            "2",
            "--workspace",
            str(workspace.root),
            "--config",
            str(config_dir),
            "--current-prompt",
        ]
    )
    assert code == 1  # one request changed: the replay found something to look at
    out = capsys.readouterr().out
    assert "CHANGED" in out and "SAME" in out and "2 request(s) replayed" in out
    # --current-prompt sent today's system prompt, which lists the test skills.
    assert "save_note" in chat_server.chat_requests[-1]["messages"][0]["content"]

    out_file = tmp_path / "cases" / "mine.yaml"
    out_file.parent.mkdir()
    assert (
        main(["trace", "export-cases", "--last", "3", "--workspace", str(workspace.root), "--out", str(out_file)]) == 0
    )
    cases = yaml.safe_load(out_file.read_text())["cases"]
    assert [c["expect"]["skill"] for c in cases] == ["add", "save_note", None]
