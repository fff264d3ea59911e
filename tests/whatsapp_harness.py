"""WhatsApp in this process for the channel contract kit: the channel's service in a thread, its webhook on a
free loopback port, the fake Graph API (tests/fakes/graph_api.py) answering its calls and posting Meta's
signed webhooks to it. The real bot process: tests/test_whatsapp_bot.py."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.fakes.graph_api import FakeGraphAPI
from tests.waiting import wait_until

OWNER = "491701234567"
STRANGER = "15551234567"
SECRET = "kit-app-secret-0123456789abcdef"
VERIFY = "kit-verify-token"
TEMPLATE = "assistant_message"


class RunningWhatsApp:
    """A WhatsAppService running in a thread; ``start`` returns once its webhook listens."""

    def __init__(self, runtime: Any, graph: FakeGraphAPI) -> None:
        from messaging_llm_bot.channels.whatsapp.service import WhatsAppService

        self.runtime = runtime
        self.graph = graph
        self.service = WhatsAppService(runtime)
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._run, name="whatsapp-under-test", daemon=True)

    def _run(self) -> None:
        self.exit_code = self.service.run()

    def start(self) -> RunningWhatsApp:
        self._thread.start()
        wait_until(lambda: self.service.ready.is_set() or self.exit_code is not None, 15, "WhatsApp to start")
        assert self.exit_code is None and self.service.webhook is not None, f"it exited with {self.exit_code}"
        self.graph.connect(self.service.webhook.url, SECRET)
        return self

    def stop(self, timeout: float = 20) -> int | None:
        self.service.stop(timeout)
        self._thread.join(timeout)
        return self.exit_code


def whatsapp_config(base: dict, graph: FakeGraphAPI, **overrides: Any) -> dict:
    return {
        **base,
        "memory": {"enabled": False},
        "whatsapp": {
            "enabled": True,
            "phone_number_id": graph.phone_number_id,
            "access_token": graph.token,
            "app_secret_env": "WA_KIT_APP_SECRET",
            "verify_token": VERIFY,
            "allowed": [f"+{OWNER}"],
            "webhook": {"port": 0},
            "base_url": graph.base_url,
            **overrides,
        },
    }


@pytest.fixture
def whatsapp_graph():
    with FakeGraphAPI() as fake:
        fake.add_template(TEMPLATE, "en_US", params=1)
        yield fake


@pytest.fixture
def start_whatsapp(bot_config, workspace, tmp_path, whatsapp_graph, monkeypatch):
    """Factory: ``start_whatsapp(patch=None)`` runs the channel; every one stops after the test."""
    from tests.telegram_harness import make_runtime

    monkeypatch.setenv("WA_KIT_APP_SECRET", SECRET)
    running: list[RunningWhatsApp] = []

    def run(patch=None) -> RunningWhatsApp:
        config = whatsapp_config(bot_config, whatsapp_graph)
        if patch:
            patch(config)
        bot = RunningWhatsApp(make_runtime(config, workspace, tmp_path), whatsapp_graph).start()
        running.append(bot)
        return bot

    run.running = running  # type: ignore[attr-defined]
    yield run
    for bot in running:
        if bot._thread.is_alive():
            bot.stop()
