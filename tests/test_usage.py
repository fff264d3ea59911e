"""Usage you can read: ``/stats`` in the running bot and ``assistant usage [--json]`` show each runner's tokens
(and cost) today and this month, marked "estimated" where the server reports no usage (a llama.cpp server
without it: /stats said "0 in, 0 out" while the cap counted an estimate), and the caps."""

from __future__ import annotations

import json
from pathlib import Path

from assistant_framework.config.settings import RunnerSettings
from assistant_framework.config.settings.fields import read_record
from assistant_framework.spending import CallTokens, SpendingLedger
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests.telegram_harness import texts


def usage(capsys, config: Path, workspace: Path, *extra: str) -> tuple[int, str]:
    code = main(["usage", "--config", str(config), "--workspace", str(workspace), *extra])
    return code, capsys.readouterr().out


def test_a_server_without_usage_is_shown_estimated_in_stats_and_assistant_usage(
    fake, start_bot, chat_server, workspace, tmp_path, capsys
) -> None:
    written: dict = {}

    def remember(config: dict) -> None:
        written.update(config)

    start_bot(config_patch=remember, progress=False)
    chat_server.enqueue({"content": '{"reply": "hello there"}', "usage": None})  # llama.cpp without usage
    fake.send_message("hi")
    fake.wait_for(lambda: "hello there" in texts(fake))
    fake.send_message("/stats")
    stats = fake.wait_for(lambda: [t for t in texts(fake) if "Per runner" in t])[0]
    line = next(row for row in stats.splitlines() if "fake (fake-model): today " in row)  # "- " shown as a bullet
    today = int(line.split("today ")[1].split(" tokens")[0].replace(",", ""))
    assert today > 0 and "(estimated: the server reports no usage)" in line  # the cap's count, said to be one
    assert "0 in, 0 out" not in stats and "tokens not reported by the server" in stats

    config = tmp_path / "bot-config.json"
    config.write_text(json.dumps(written))
    code, out = usage(capsys, config, workspace.root, "--json")
    assert code == 0
    [runner] = json.loads(out)["runners"]
    assert runner["runner"] == "fake" and runner["today"]["tokens"] == today and runner["today"]["estimated"]
    assert runner["month"]["tokens"] == today and runner["month"]["cost"] is None  # no price: no cost
    code, out = usage(capsys, config, workspace.root)
    assert code == 0 and f"today {today:,} tokens (estimated" in out and "Spending caps: none" in out


def test_stats_says_which_calls_of_a_turn_the_server_reported_no_usage_for(fake, start_bot, chat_server) -> None:
    """llama.cpp's server reports usage only when it does not stream: with SmolLM2 a turn of three calls showed
    "1 msgs, 1072 in, 14 out" under a runner line of 3,345 estimated tokens, the other two calls left out unsaid."""
    start_bot(progress=False)
    chat_server.enqueue(
        {"content": '{"skill": "add", "args": {"a": 2, "b": 3}}', "usage": None},
        {"content": '{"reply": "five"}', "usage": {"prompt_tokens": 120, "completion_tokens": 4}},
    )
    fake.send_message("add 2 and 3")
    fake.wait_for(lambda: "five" in texts(fake))
    fake.send_message("/stats")
    stats = fake.wait_for(lambda: [t for t in texts(fake) if "Usage, last 30 days" in t])[0]
    total = next(row for row in stats.splitlines() if "total: " in row)
    assert "120 in, 4 out (1 of 2 calls not reported by the server)" in total, stats


def test_assistant_usage_shows_cost_and_caps_of_a_priced_runner(tmp_path, capsys) -> None:
    runner = {
        "name": "hosted",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "big",
        "limits": {"daily_tokens": 10000},
        "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
    }
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"llm": {"runners": [runner]}, "runtime": {"timezone": "UTC"}}))
    workspace = Workspace(tmp_path / "ws")
    ledger = SpendingLedger(workspace, "UTC")
    ledger.record(read_record(RunnerSettings, runner), CallTokens(prompt=1500, completion=500))

    code, out = usage(capsys, config, workspace.root)
    assert code == 0
    assert "- hosted (big): today 2,000 tokens, cost 0.0025; this month 2,000 tokens, cost 0.0025" in out
    assert "estimated" not in out  # the server reported its usage
    assert "daily tokens 2,000 of 10,000 (20 %)" in out
    code, out = usage(capsys, config, workspace.root, "--json")
    data = json.loads(out)
    assert data["runners"][0]["today"] == {
        "period": ledger.periods()[0],
        "tokens": 2000,
        "cost": 0.0025,
        "estimated": False,
    }
    assert [cap["cap"] for cap in data["caps"]] == ["daily_tokens"] and data["caps"][0]["used"] == 2000


def test_assistant_usage_of_a_folder_that_is_no_workspace_exits_2(tmp_path, capsys) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"runtime": {"timezone": "UTC"}}))
    (tmp_path / "typo").mkdir()
    code = main(["usage", "--config", str(config), "--workspace", str(tmp_path / "typo")])
    assert code == 2 and "not a workspace" in capsys.readouterr().err
    assert not list((tmp_path / "typo").iterdir())  # nothing was created there
