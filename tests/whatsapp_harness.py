"""WhatsApp in this process for the channel contract kit: the channel's service in a thread, its webhook on a
free loopback port, the fake Graph API (tests/fakes/graph_api.py) answering its calls and posting Meta's
signed webhooks to it. The real bot process: tests/test_whatsapp_bot.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.graph_api import FakeGraphAPI
from tests.running_channel import RunningChannel, starting

OWNER = "491701234567"
STRANGER = "15551234567"
SECRET = "kit-app-secret-0123456789abcdef"
VERIFY = "kit-verify-token"
TEMPLATE = "assistant_message"


class RunningWhatsApp(RunningChannel):
    """A WhatsAppService running in a thread; ``start`` returns once its webhook listens."""

    def __init__(self, runtime: Any, graph: FakeGraphAPI) -> None:
        from messaging_llm_bot.channels.whatsapp.service import WhatsAppService

        super().__init__(runtime, WhatsAppService(runtime), "WhatsApp")
        self.graph = graph

    def start(self) -> RunningWhatsApp:
        super().start()
        assert self.service.webhook is not None, "it listens"
        self.graph.connect(self.service.webhook.url, SECRET)
        return self


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
    yield from starting(
        lambda: whatsapp_config(bot_config, whatsapp_graph),
        lambda config: RunningWhatsApp(make_runtime(config, workspace, tmp_path), whatsapp_graph).start(),
    )
