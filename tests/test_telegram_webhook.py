"""Webhook mode: the bot registers its URL and answers updates POSTed to it (secret checked)."""

from __future__ import annotations

import socket
import time

import requests

from tests.telegram_harness import OWNER, fake, start_bot, texts  # noqa: F401


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def update(update_id: int, text: str, user_id: int = OWNER) -> dict:
    user = {"id": user_id, "is_bot": False, "first_name": "Owner", "username": "owner"}
    return {"update_id": update_id, "message": {
        "message_id": update_id, "date": int(time.time()), "chat": {"id": user_id, "type": "private"},
        "from": user, "text": text}}


def post(port: int, body: dict, secret: str) -> requests.Response:
    deadline = time.monotonic() + 10
    while True:  # the webhook server starts right after setWebhook
        try:
            return requests.post(f"http://127.0.0.1:{port}/telegram", json=body, timeout=5,
                                 headers={"X-Telegram-Bot-Api-Secret-Token": secret})
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_webhook_mode_registers_and_answers(fake, start_bot, chat_server):
    port = free_port()
    start_bot(mode="webhook", webhook={"listen": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}/telegram",
                                       "secret_token": "s3cret-token"})
    registered = fake.wait_for(lambda: fake.calls("setWebhook"), timeout=10)
    assert registered[0]["params"]["url"] == f"http://127.0.0.1:{port}/telegram"
    assert registered[0]["params"]["secret_token"] == "s3cret-token"
    assert not fake.calls("getUpdates")

    refused = post(port, update(900, "let me in"), secret="wrong")
    assert refused.status_code == 403
    chat_server.enqueue('{"reply": "Hello over the webhook!"}')
    assert post(port, update(901, "hello"), secret="s3cret-token").status_code == 200
    fake.wait_for(lambda: "Hello over the webhook!" in texts(fake), timeout=10)
    assert len(chat_server.chat_requests) == 1  # the refused update never reached the model
