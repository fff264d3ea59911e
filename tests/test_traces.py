"""Traces: written per turn, secrets redacted, pruned; the trace CLI; /stats aggregation."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from assistant_framework.traces import (
    TraceStore,
    aggregate_usage,
    collect_secrets,
    new_trace_id,
    redact_secrets,
    trace_path,
)
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.cli.main import main as cli_main
from tests.fakes.chat_server import FakeChatServer

API_KEY = "sk-test-0123456789abcdef"
BOT_TOKEN = "123456:ABCdefGHIjklMNOpqr"


def all_trace_text(workspace) -> str:
    return "".join(workspace.read_text(p) for p in workspace.list("traces/**/*.json"))


def test_trace_written_with_requests_sizes_and_redaction(bot_config, workspace, make_agent):
    with FakeChatServer(api_key=API_KEY) as server:
        bot_config["llm"]["runners"][0].update(base_url=server.base_url, api_key=API_KEY)
        bot_config["telegram"]["token"] = BOT_TOKEN
        agent = make_agent(bot_config, workspace)
        # The first answer is held back 0.2 s: the trace must show at least that as the request's time.
        server.enqueue(
            {"content": '{"skill": "add", "args": {"a": 1, "b": 2}}', "delay": 0.2},
            f"Your token is {BOT_TOKEN} and key {API_KEY}",
        )
        result = agent.handle(AgentMessage("c1", f"tell me {BOT_TOKEN}"))
    assert result.ok and result.trace_id
    trace = TraceStore(workspace).load(result.trace_id)
    assert trace["conversation"] == "c1" and trace["model"] == "fake-model" and trace["runner"] == "fake"
    assert trace["rounds"] == 2 and len(trace["requests"]) == 2
    first = trace["requests"][0]
    assert first["messages"][0]["role"] == "system"
    assert first["parsed"]["calls"] == [{"skill": "add", "args": {"a": 1, "b": 2}, "args_error": None}]
    assert first["response"]["choices"][0]["message"]["content"].startswith('{"skill"')
    assert first["usage"]["prompt_tokens"] > 0 and first["elapsed_s"] >= 0.2
    assert trace["section_sizes"]["tools"]["chars"] > 0 and "total" in trace["section_sizes"]
    # The call record keeps the trace's JSON form: the fields that were set, readable by older tools too.
    [call] = trace["skill_calls"]
    assert set(call) == {"skill", "args", "round", "ok", "decision", "elapsed_s"}
    assert (call["skill"], call["args"], call["round"], call["ok"]) == ("add", {"a": 1, "b": 2}, 1, True)
    assert call == result.skill_calls[0].as_dict()
    text = all_trace_text(workspace)
    assert API_KEY not in text and BOT_TOKEN not in text
    assert "Your token is *** and key ***" in text


def test_failed_turn_is_traced(bot_config, workspace, chat_server, make_agent):
    chat_server.enqueue({"status": 500})
    result = make_agent(bot_config, workspace).handle(AgentMessage("c1", "hi"))
    trace = TraceStore(workspace).load(result.trace_id)
    assert trace["ok"] is False and trace["error"] and trace["requests"][0]["error"]["kind"] == "server"


def test_traces_pruned_to_keep(bot_config, workspace, chat_server, make_agent):
    bot_config["runtime"]["trace_keep"] = 3
    agent = make_agent(bot_config, workspace)
    ids = [agent.handle(AgentMessage("c1", f"m{i}")).trace_id for i in range(5)]
    store = TraceStore(workspace)
    assert store.ids() == ids[-3:]
    assert len(workspace.list("traces/**/*.json")) == 3


def test_trace_ids_sort_by_time_and_map_to_day_folders():
    a = new_trace_id(datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc))
    b = new_trace_id(datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=timezone.utc))
    assert a < b and trace_path(a).startswith("traces/2026-01-02/")


def test_collect_and_redact_secrets():
    config = {
        "llm": {"runners": [{"api_key": "sk-abcdef"}]},
        "telegram": {"token": "tok-123456", "webhook": {"secret_token": "s3cr3t!"}},
        "collectors": {"mail": {"password": "hunter22"}},
        "runtime": {"timezone": "UTC"},
        "x": {"token": ""},
    }
    secrets = collect_secrets(config, extra=["env-key-9999"])
    assert set(secrets) == {"sk-abcdef", "tok-123456", "s3cr3t!", "hunter22", "env-key-9999"}
    redacted = redact_secrets({"a": ["xx hunter22 yy"], "hunter22": 1, "n": 5}, secrets)
    assert redacted == {"a": ["xx *** yy"], "***": 1, "n": 5}


def test_cli_last_prompt_list_show(bot_config, workspace, chat_server, capsys, make_agent):
    agent = make_agent(bot_config, workspace)
    chat_server.enqueue('{"skill": "add", "args": {"a": 1, "b": 2}}', "three", "second reply")
    first = agent.handle(AgentMessage("conv-a", "one plus two"))
    second = agent.handle(AgentMessage("conv-b", "again"))

    assert cli_main(["trace", "last-prompt", "--workspace", str(workspace.root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("=== system ===\n")
    assert "=== user ===\nagain\n\n[Now]" in out
    for section in ("base", "protocol", "tools", "workspace", "history", "user_message", "total"):
        assert f"\n{section} " in out
    assert second.trace_id in out

    assert cli_main(["trace", "list", "--workspace", str(workspace.root)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith(second.trace_id) and "conv-b" in lines[0] and "rounds 1" in lines[0]
    assert lines[1].startswith(first.trace_id) and "rounds 2" in lines[1] and "fake-model" in lines[1]

    assert cli_main(["trace", "show", first.trace_id[:21], "--workspace", str(workspace.root)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == first.trace_id and shown["reply"] == "three"

    assert cli_main(["trace", "show", "nope", "--workspace", str(workspace.root)]) == 2
    assert "no trace id starts with 'nope'" in capsys.readouterr().err


def test_cli_last_prompt_without_traces(tmp_path, capsys):
    Workspace(tmp_path)
    assert cli_main(["trace", "last-prompt", "--workspace", str(tmp_path)]) == 1
    assert "no traces" in capsys.readouterr().out


def test_cli_on_a_folder_that_is_not_a_workspace_exits_2_and_creates_nothing(tmp_path, capsys):
    typo = tmp_path / "typo_ws"
    config = tmp_path / "cfg"
    config.mkdir()
    for argv in (["trace", "list"], ["memory", "stats"], ["collectors", "status"], ["trace", "last-prompt"]):
        assert (
            cli_main([*argv, "--workspace", str(typo)] + (["--config", str(config)] if argv[0] != "trace" else [])) == 2
        ), argv
        assert "not a workspace" in capsys.readouterr().err
    assert not typo.exists()


def test_stats_per_day_and_model(workspace):
    store = TraceStore(workspace)

    def trace(day, model, prompt, cached, seconds):
        return {
            "id": new_trace_id(datetime.fromisoformat(f"{day}T10:00:00+00:00")),
            "time": f"{day}T11:00:00+01:00",
            "requests": [
                {
                    "model": model,
                    "elapsed_s": seconds,
                    "usage": {"prompt_tokens": prompt, "completion_tokens": 5, "cached_tokens": cached},
                }
            ],
        }

    store.write(trace("2026-03-01", "m1", 100, 50, 1.0))
    store.write(trace("2026-03-02", "m1", 200, 0, 2.0))
    store.write(trace("2026-03-02", "m2", 300, 100, 0.5))
    store.write(trace("2025-01-01", "old", 999, 0, 9.0))
    stats = store.stats(days=30, now=datetime(2026, 3, 3, tzinfo=timezone.utc))
    assert set(stats["by_day"]) == {"2026-03-01", "2026-03-02"}
    assert stats["by_day"]["2026-03-02"]["prompt_tokens"] == 500 and stats["by_day"]["2026-03-02"]["turns"] == 2
    assert stats["by_model"]["m1"] == {
        "turns": 2,
        "requests": 2,
        "model_s": 3.0,
        "prompt_tokens": 300,
        "completion_tokens": 10,
        "cached_tokens": 50,
        "reasoning_tokens": 0,
        "unreported": 0,
    }
    assert stats["total"]["cached_tokens"] == 150
    assert aggregate_usage([])["total"]["turns"] == 0


def test_stats_outlive_trace_pruning(workspace):
    store = TraceStore(workspace, keep=1)
    for hour in range(3):
        store.write(
            {
                "time": f"2026-03-02T1{hour}:00:00+00:00",
                "requests": [{"model": "m1", "elapsed_s": 1.0, "usage": {"prompt_tokens": 10, "completion_tokens": 1}}],
            }
        )
    assert len(store.ids()) == 1  # only one trace kept ...
    stats = store.stats(days=30, now=datetime(2026, 3, 3, tzinfo=timezone.utc))
    assert stats["total"]["turns"] == 3 and stats["total"]["prompt_tokens"] == 30  # ... but /stats saw all three
    assert workspace.list("state/usage/*.jsonl") == ["state/usage/2026-03.jsonl"]


def test_a_damaged_trace_costs_only_itself_in_the_cli(workspace, capsys):
    """A trace cut in half (disk full, a copy interrupted) made every trace command an internal error."""
    store = TraceStore(workspace)
    request = {"model": "m", "messages": [{"role": "user", "content": "older question"}], "usage": {"prompt_tokens": 5}}
    older = store.write(
        {
            "id": new_trace_id(datetime(2026, 6, 1, 10, tzinfo=timezone.utc)),
            "time": "2026-06-01T10:00:00+00:00",
            "conversation": "c",
            "model": "m",
            "rounds": 1,
            "requests": [request],
        }
    )
    newer = store.write(
        {
            "id": new_trace_id(datetime(2026, 6, 2, 10, tzinfo=timezone.utc)),
            "time": "2026-06-02T10:00:00+00:00",
            "conversation": "c",
            "model": "m",
            "rounds": 1,
            "requests": [request],
        }
    )
    cut = workspace.path(trace_path(newer))
    cut.write_text(cut.read_text()[:40])
    root = str(workspace.root)

    assert cli_main(["trace", "list", "--workspace", root]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(older) and newer not in captured.out
    assert newer in captured.err and "damaged" in captured.err and "internal error" not in captured.err
    assert cli_main(["trace", "list", "--json", "--workspace", root]) == 0
    assert [row["id"] for row in json.loads(capsys.readouterr().out)] == [older]

    assert cli_main(["trace", "show", newer, "--workspace", root]) == 1
    captured = capsys.readouterr()
    assert (
        captured.out == ""
        and newer in captured.err
        and "damaged" in captured.err
        and "internal error" not in captured.err
    )

    assert cli_main(["trace", "last-prompt", "--workspace", root]) == 0
    captured = capsys.readouterr()
    assert "older question" in captured.out and older in captured.out and newer in captured.err
    assert cli_main(["trace", "last-prompt", "--json", "--workspace", root]) == 0
    assert json.loads(capsys.readouterr().out)["trace"] == older


def test_stats_skip_ledger_rows_of_the_wrong_shape(workspace):
    """A hand-edited usage line that is JSON but not a usage row made /stats and the web page's usage fail."""
    now = datetime(2026, 6, 10, 12, tzinfo=timezone.utc)
    good = {
        "time": "2026-06-10T10:00:00+00:00",
        "requests": [{"model": "m", "elapsed_s": 1.5, "usage": {"prompt_tokens": 100}}],
    }
    lines = [
        good,
        {"time": "2026-06-10T10:01:00+00:00", "requests": "x"},
        {
            "time": "2026-06-10T10:02:00+00:00",
            "requests": [7, {"model": "m", "elapsed_s": "slow", "usage": {"prompt_tokens": "lots"}}],
        },
        {"time": "2026-06-10T10:03:00+00:00", "requests": [{"model": "m", "usage": [1]}]},
    ]
    workspace.write_text("state/usage/2026-06.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    stats = TraceStore(workspace).stats(days=30, now=now)
    assert stats["total"]["prompt_tokens"] == 100 and stats["total"]["model_s"] == 1.5 and stats["total"]["turns"] == 4


def test_trace_show_and_last_prompt_mask_the_configs_secrets_even_in_an_old_trace(
    bot_config, workspace, chat_server, tmp_path, capsys, make_agent
):
    """A trace written before a key was configured holds it in clear; printing it masks it."""
    agent = make_agent(bot_config, workspace)
    chat_server.enqueue('{"reply": "noted"}')
    result = agent.handle(AgentMessage("conv-a", "my new key is sk-live-0123456789abcdef, keep it"))
    assert "sk-live-0123456789abcdef" in workspace.read_text(trace_path(result.trace_id))  # not a secret back then
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "llm": {
                    "runners": [
                        {
                            "name": "x",
                            "base_url": "http://127.0.0.1:9/v1",
                            "model": "m",
                            "api_key": "sk-live-0123456789abcdef",
                        }
                    ]
                }
            }
        )
    )
    root = str(workspace.root)
    for argv in (
        ["trace", "show", result.trace_id, "--workspace", root, "--config", str(config)],
        ["trace", "last-prompt", "--workspace", root, "--config", str(config)],
        ["trace", "last-prompt", "--json", "--workspace", root, "--config", str(config)],
    ):
        assert cli_main(argv) == 0
        out = capsys.readouterr().out
        assert "sk-live-0123456789abcdef" not in out and "***" in out, argv
    assert cli_main(["trace", "show", result.trace_id, "--workspace", root]) == 0  # no config here: printed as stored
    assert "sk-live-0123456789abcdef" in capsys.readouterr().out
