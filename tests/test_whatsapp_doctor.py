"""``assistant doctor`` with ``whatsapp.enabled``, against the fake Graph API and the channel running in this
process: the token reaches the number, the running bot's webhook answers the handshake, the allowlist is set,
a missing template is a warning; a wrong token, an empty allowlist and no bot listening each say what to do."""

from __future__ import annotations

import json
from pathlib import Path

from messaging_llm_bot.cli.main import main
from tests.fakes.chat_server import FakeChatServer
from tests.whatsapp_harness import OWNER, whatsapp_config


def _doctor(capsys, config: Path, workspace: Path) -> dict[str, dict]:
    main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(workspace)])
    return {c["name"]: c for c in json.loads(capsys.readouterr().out)}


def test_doctor_checks_the_token_the_webhook_the_allowlist_and_the_template(
    tmp_path: Path, capsys, start_whatsapp, whatsapp_graph, workspace
) -> None:
    bot = start_whatsapp()
    assert bot.service.webhook is not None
    config = tmp_path / "config"
    config.mkdir()
    with FakeChatServer() as chat:
        chat.set_handler(lambda request: "OK")
        (config / "llm.json").write_text(
            json.dumps({"runners": [{"name": "l", "base_url": chat.base_url, "model": "m"}]})
        )
        section = whatsapp_config({}, whatsapp_graph)["whatsapp"]
        section["webhook"] = {"port": bot.service.webhook.port}
        (config / "whatsapp.json").write_text(json.dumps(section))
        checks = _doctor(capsys, config, workspace.root)
        assert checks["whatsapp allowlist"]["status"] == "ok" and OWNER in checks["whatsapp allowlist"]["detail"]
        assert checks["whatsapp token"]["status"] == "ok" and "555-000-1234" in checks["whatsapp token"]["detail"]
        assert checks["whatsapp webhook"]["status"] == "ok"
        assert checks["whatsapp template"]["status"] == "warn" and "wait" in checks["whatsapp template"]["detail"]

        bot.stop()
        wrong = {**section, "access_token": "EAAG-wrong", "allowed": [], "template": {"name": "assistant_message"}}
        (config / "whatsapp.json").write_text(json.dumps(wrong))
        checks = _doctor(capsys, config, workspace.root)
        assert checks["whatsapp allowlist"]["status"] == "fail"
        assert checks["whatsapp token"]["status"] == "fail" and "#190" in checks["whatsapp token"]["detail"]
        assert checks["whatsapp webhook"]["status"] == "warn" and "not running" in checks["whatsapp webhook"]["detail"]
        assert checks["whatsapp template"]["status"] == "ok"
        assert "EAAG-wrong" not in json.dumps(checks)  # the token is never shown
