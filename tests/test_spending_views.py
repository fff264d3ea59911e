"""The spending caps where the owner sees them: /stats, the web Usage page (HTTP) and doctor."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import requests

from assistant_framework.config.settings import RunnerSettings
from assistant_framework.config.settings.fields import read_record
from assistant_framework.spending import CallTokens, SpendingLedger
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests.telegram_harness import OWNER, texts


def _runner(limits: dict, base_url: str = "http://127.0.0.1:9/v1") -> RunnerSettings:
    return read_record(RunnerSettings, {"name": "A", "base_url": base_url, "model": "m", "limits": limits})


def _spend(workspace: Workspace, runner: RunnerSettings, tokens: int, zone: str = "UTC") -> None:
    SpendingLedger(workspace, zone).record(runner, CallTokens(prompt=tokens, completion=0))


def test_stats_shows_each_cap_what_is_used_and_when_it_resets(fake, start_bot, chat_server):
    def capped(config: dict) -> None:
        config["llm"]["runners"][0]["limits"] = {"daily_tokens": 100000, "monthly_cost": 5}
        config["llm"]["runners"][0]["price"] = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}

    start_bot(config_patch=capped, progress=False)
    chat_server.enqueue({"content": '{"reply": "hi"}', "usage": {"prompt_tokens": 1500, "completion_tokens": 500}})
    fake.send_message("hello")
    fake.wait_for(lambda: "hi" in texts(fake))
    fake.send_message("/stats")
    stats = fake.wait_for(lambda: [t for t in texts(fake) if "Spending caps" in t])[0]
    assert "daily tokens 2,000 of 100,000 (2 %)" in stats
    assert "monthly cost 0.00 of 5.00" in stats and "resets" in stats
    assert OWNER


def _hold_back(workspace: Workspace, runner: RunnerSettings, tokens: int, zone: str = "UTC") -> None:
    """A turn's call of ``tokens`` the runner's first cap kept from it, as the model client reports it."""
    ledger = SpendingLedger(workspace, zone)
    use = ledger.hold(runner, CallTokens(prompt=tokens, completion=0), background=False)
    ledger.skipped(use, "B")


def test_the_usage_page_shows_the_caps(tmp_path):
    from tests.web_site import WEB_TOKEN, start_site

    site = start_site(tmp_path)
    bearer = {"Authorization": f"Bearer {WEB_TOKEN}"}
    try:
        runner = _runner({"daily_tokens": 1000})
        parts = site.server.state.parts
        parts.settings = _with_runner(parts.settings, runner)
        _spend(site.workspace, runner, 850, parts.settings.runtime.timezone)
        _hold_back(site.workspace, runner, 400, parts.settings.runtime.timezone)  # 850 + 400 would pass 1,000
        caps = requests.get(f"{site.base}/api/usage", headers=bearer, timeout=10).json()["caps"]
        assert [
            (c["runner"], c["cap"], c["used"], c["left"], c["percent"], c["reached"], c["refused"]) for c in caps
        ] == [("A", "daily_tokens", 850, 150, 85.0, False, 1)]
        page = requests.get(f"{site.base}/usage", headers=bearer, timeout=10).text
        assert "Spending caps" in page and "daily tokens" in page and "85 %" in page
        assert "calls held back</th>" in page and '<td class="num">1</td>' in page
    finally:
        site.close()


def _with_runner(settings, runner: RunnerSettings):
    import dataclasses

    return dataclasses.replace(settings, llm=dataclasses.replace(settings.llm, runners=(runner,)))


def test_doctor_warns_from_80_percent_and_when_a_cap_is_reached(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config"
    config.mkdir()
    runners = [
        {"name": "A", "base_url": "http://127.0.0.1:9/v1", "model": "m", "limits": {"daily_tokens": 1000}},
        {"name": "B", "base_url": "http://127.0.0.1:9/v1", "model": "m", "limits": {"monthly_tokens": 1000}},
        {"name": "C", "base_url": "http://127.0.0.1:9/v1", "model": "m", "limits": {"monthly_tokens": 1000}},
        {"name": "D", "base_url": "http://127.0.0.1:9/v1", "model": "m", "limits": {"monthly_tokens": 1000}},
    ]
    (config / "llm.json").write_text(json.dumps({"runners": runners}))
    (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    ws = Workspace(tmp_path / "ws")
    records = [read_record(RunnerSettings, r) for r in runners]
    _spend(ws, records[0], 850)
    _spend(ws, records[1], 1200)
    _spend(ws, records[2], 100)
    _spend(ws, records[3], 300)
    _hold_back(ws, records[3], 900)  # far below 80 %, but a call of 900 would have passed the cap
    main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(ws.root)])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["spending cap A"]["status"] == "warn" and "85 %" in checks["spending cap A"]["detail"]
    assert "background work" in checks["spending cap A"]["fix"]
    assert checks["spending cap B"]["status"] == "warn" and "reached" in checks["spending cap B"]["detail"]
    assert checks["spending cap C"]["status"] == "ok"
    held = checks["spending cap D"]
    assert held["status"] == "warn" and "1 call(s) held back" in held["detail"] and "700 left" in held["fix"]
    assert datetime.now().year  # the ledger's day is today's


def test_doctor_warns_when_a_capped_runners_answers_have_no_bound(tmp_path: Path, capsys) -> None:
    """The estimate before a call bounds its answer by max_tokens: without one, doctor says a cap can be passed."""
    config = tmp_path / "config"
    config.mkdir()
    base = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "limits": {"daily_tokens": 1000}}
    runners = [{"name": "A", **base}, {"name": "B", **base, "extra_body": {"max_completion_tokens": 500}}]
    (config / "llm.json").write_text(json.dumps({"runners": runners, "max_tokens": None}))
    main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    bound = checks["spending caps bound"]
    assert bound["status"] == "warn" and "'A'" in bound["detail"] and "'B'" not in bound["detail"]
    assert "config set llm.max_tokens" in bound["fix"]
    (config / "llm.json").write_text(json.dumps({"runners": runners}))  # the default max_tokens: bounded
    main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
    assert "spending caps bound" not in {c["name"] for c in json.loads(capsys.readouterr().out)}
