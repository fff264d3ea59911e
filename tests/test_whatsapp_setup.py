"""``assistant setup`` configures the WhatsApp channel (issue 50): by flags, against the fake Graph API, the
token tried from the named environment variable (never written), a verify token made for the webhook, the
settings in the local layer with ``enabled`` last, and ``doctor`` then reaches the number; a wrong token stops
setup with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from messaging_llm_bot.cli.main import main
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.graph_api import FakeGraphAPI
from tests.setup_runs import channel_setup, example_config


def _setup(config: Path, tmp_path: Path, chat: FakeChatServer, graph: FakeGraphAPI) -> int:
    return channel_setup(
        config,
        tmp_path,
        chat,
        *("--whatsapp", graph.phone_number_id, "--whatsapp-base-url", graph.base_url),
        *("--whatsapp-token-env", "WA_SETUP_TOKEN", "--whatsapp-secret-env", "WA_SETUP_SECRET"),
        *("--whatsapp-owner", "+491701234567", "--whatsapp-template", "assistant_message"),
    )


def test_setup_writes_the_whatsapp_channel_and_doctor_reaches_the_number(tmp_path, capsys, monkeypatch, whatsapp_graph):
    graph = whatsapp_graph
    config = example_config(tmp_path)
    monkeypatch.setenv("WA_SETUP_SECRET", "an-app-secret-0123456789")
    with FakeChatServer() as chat:
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("WA_SETUP_TOKEN", graph.token + "-wrong")
        assert _setup(config, tmp_path, chat, graph) == 2
        assert "#190" in capsys.readouterr().err and not (config / "local" / "whatsapp.json").exists()

        monkeypatch.setenv("WA_SETUP_TOKEN", graph.token)
        assert _setup(config, tmp_path, chat, graph) == 0, capsys.readouterr()
        out = capsys.readouterr().out
        assert "reaches +1 555-000-1234" in out and "the verify token" in out
        written = json.loads((config / "local" / "whatsapp.json").read_text())
        assert written["enabled"] is True and written["allowed"] == ["+491701234567"]
        assert written["access_token_env"] == "WA_SETUP_TOKEN" and written["template"] == {"name": "assistant_message"}
        assert len(written["verify_token"]) >= 16 and written["verify_token"] in out
        assert graph.token not in (config / "local" / "whatsapp.json").read_text()
        main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
        checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert checks["whatsapp token"]["status"] == "ok" and checks["whatsapp allowlist"]["status"] == "ok"
