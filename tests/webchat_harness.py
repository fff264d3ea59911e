"""The web chat in this process for the channel contract kit: the channel's service in a thread beside the
page's web server (the Chat page mounted as the bot mounts it), driven over HTTP as the page's script drives
it, signed in with the page's token. The browser test (tests/test_web_chat_browser.py) covers the page itself."""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

import httpx
import pytest

from assistant_framework.tls import shared_context
from tests.waiting import wait_until

TOKEN = "kit-web-token-" + "k" * 24


class RunningWebChat:
    """The web chat's service and the web server of one runtime; ``stop`` ends both (and the runtime)."""

    def __init__(self, runtime: Any) -> None:
        from assistant_framework.web.server import WebServer
        from messaging_llm_bot.channels.webchat.page import chat_mount
        from messaging_llm_bot.channels.webchat.service import WebChatService

        self.runtime = runtime
        self.service = WebChatService(runtime)
        self.server = WebServer(runtime, port=0, mounts=[chat_mount(runtime)])
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._run, name="webchat-under-test", daemon=True)
        self.client: httpx.Client | None = None
        self.form_token = ""

    def _run(self) -> None:
        self.exit_code = self.service.run()

    def start(self) -> RunningWebChat:
        self.server.start()
        self._thread.start()
        wait_until(lambda: self.service.ready.is_set() or self.exit_code is not None, 15, "the web chat to start")
        # The process's one TLS context: httpx would read and parse certifi's bundle for every client (~25 ms of
        # CPU at each start of the chat, though the page is plain HTTP).
        self.client = httpx.Client(base_url=self.server.url.rstrip("/"), timeout=10, verify=shared_context())
        self.client.get(f"/chat?token={TOKEN}", follow_redirects=True)
        found = re.search(r'<meta name="csrf" content="([0-9a-f]+)">', self.client.get("/chat").text)
        assert found, "the Chat page has its form token"
        self.form_token = found.group(1)
        return self

    def send(self, text: str) -> None:
        assert self.client is not None
        sent = self.client.post(
            "/chat/send", json={"id": uuid.uuid4().hex, "text": text}, headers={"X-XSRFToken": self.form_token}
        )
        assert sent.status_code == 202, sent.text

    def history(self) -> dict[str, Any]:
        assert self.client is not None
        got: dict[str, Any] = self.client.get("/chat/history").json()
        return got

    def replies(self) -> list[str]:
        """The assistant's messages (and notices) shown in the chat, in order."""
        return [m["text"] for m in self.history()["messages"] if m["role"] != "owner"]

    def replies_until(self, done: Any, timeout: float = 30) -> list[str]:
        wait_until(lambda: done(self.replies()), timeout, "the web chat's reply")
        return self.replies()

    def answer(self, question_id: str, yes: bool) -> None:
        assert self.client is not None
        answered = self.client.post(
            "/chat/answer", json={"id": question_id, "yes": yes}, headers={"X-XSRFToken": self.form_token}
        )
        assert answered.status_code == 200, answered.text

    def stop(self, timeout: float = 20) -> int | None:
        if self.client is not None:
            self.client.close()
        self.service.stop(timeout)
        self._thread.join(timeout)
        self.server.stop()
        return self.exit_code


@pytest.fixture
def start_webchat(bot_config, workspace, tmp_path):
    """Factory: ``start_webchat(patch=None)`` runs the web chat; every one stops after the test."""
    from tests.telegram_harness import make_runtime

    running: list[RunningWebChat] = []

    def run(patch=None) -> RunningWebChat:
        config = {
            **bot_config,
            "memory": {"enabled": False},
            "web": {"enabled": True, "chat": True, "port": 0, "token": TOKEN},
        }
        if patch:
            patch(config)
        chat = RunningWebChat(make_runtime(config, workspace, tmp_path)).start()
        running.append(chat)
        return chat

    run.running = running  # type: ignore[attr-defined]
    yield run
    for chat in running:
        if chat._thread.is_alive():
            chat.stop()
