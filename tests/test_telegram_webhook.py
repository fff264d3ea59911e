"""Webhook mode: the bot registers its URL and answers updates POSTed to it (secret checked)."""

from __future__ import annotations

import gc
import json
import logging
import socket
import threading
import time

import pytest
import requests

from tests.telegram_harness import OWNER, texts


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def update(update_id: int, text: str, user_id: int = OWNER) -> dict:
    user = {"id": user_id, "is_bot": False, "first_name": "Owner", "username": "owner"}
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": int(time.time()),
            "chat": {"id": user_id, "type": "private"},
            "from": user,
            "text": text,
        },
    }


def post(port: int, body: dict, secret: str | None) -> requests.Response:
    """POST an update to the webhook, retrying until its server listens; secret=None sends no header."""
    headers = {} if secret is None else {"X-Telegram-Bot-Api-Secret-Token": secret}
    deadline = time.monotonic() + 10
    while True:  # the webhook server starts right after setWebhook
        try:
            return requests.post(f"http://127.0.0.1:{port}/telegram", json=body, timeout=5, headers=headers)
        except requests.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_webhook_mode_registers_and_answers(fake, start_bot, chat_server):
    port = free_port()
    start_bot(
        mode="webhook",
        webhook={
            "listen": "127.0.0.1",
            "port": port,
            "url": f"http://127.0.0.1:{port}/telegram",
            "secret_token": "s3cret-token-0123456789",
        },
    )
    registered = fake.wait_for(lambda: fake.calls("setWebhook"), timeout=10)
    assert registered[0]["params"]["url"] == f"http://127.0.0.1:{port}/telegram"
    assert registered[0]["params"]["secret_token"] == "s3cret-token-0123456789"
    assert not fake.calls("getUpdates")

    refused = post(port, update(900, "let me in"), secret="wrong")
    assert refused.status_code == 403
    chat_server.enqueue('{"reply": "Hello over the webhook!"}')
    assert post(port, update(901, "hello"), secret="s3cret-token-0123456789").status_code == 200
    fake.wait_for(lambda: "Hello over the webhook!" in texts(fake), timeout=10)
    assert len(chat_server.chat_requests) == 1  # the refused update never reached the model


def test_webhook_without_configured_secret_generates_one_and_refuses_forgeries(
    fake, start_bot, chat_server, workspace, monkeypatch, caplog
):
    """Issue 14.1: no secret configured must not mean "accept anything": forged updates get 403."""
    import hmac
    import logging

    compared = []
    real_compare = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: compared.append(1) or real_compare(a, b))
    port = free_port()
    caplog.set_level(logging.INFO)
    start_bot(mode="webhook", webhook={"listen": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}/telegram"})
    registered = fake.wait_for(lambda: fake.calls("setWebhook"), timeout=10)
    secret = registered[0]["params"].get("secret_token")
    assert secret and len(secret) >= 32
    assert workspace.read_text("state/webhook_secret").strip() == secret
    notices = [r.getMessage() for r in caplog.records if "state/webhook_secret" in r.getMessage()]
    assert len(notices) == 1 and secret not in notices[0]

    chat_server.enqueue('{"reply": "the owner\'s private note"}')
    no_header = post(port, update(910, "forged"), secret=None)
    assert post(port, update(910, "forged"), secret="").status_code == 403
    assert no_header.status_code == 403
    assert (
        post(port, update(911, "forged"), secret=secret[:-1] + ("A" if secret[-1] != "A" else "B")).status_code == 403
    )
    assert compared, "the secret must be compared with hmac.compare_digest"
    assert post(port, update(912, "hello"), secret=secret).status_code == 200
    fake.wait_for(lambda: "the owner's private note" in texts(fake), timeout=10)
    assert len(chat_server.chat_requests) == 1  # the forged updates never reached the model


def test_a_webhook_update_is_in_the_inbox_on_disk_before_its_post_is_answered(fake, start_bot, chat_server, workspace):
    """The 200 tells Telegram the update arrived, so it never sends it again: a crash after it must not lose it."""
    from assistant_framework.inbox import SEEN_LOG, Inbox

    release = threading.Event()  # the model holds the answer: the turn is not over when the POST is answered

    def handler(request: dict) -> dict:
        release.wait(15)
        return {"content": '{"reply": "kept"}'}

    chat_server.set_handler(handler)
    port, secret = free_port(), "s3cret-token-0123456789"
    hook = {"listen": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}/telegram", "secret_token": secret}
    start_bot(mode="webhook", webhook=hook)
    try:
        assert post(port, update(940, "keep this"), secret=secret).status_code == 200
        # The inbox logs an id as seen once its item and folder are fsynced (Inbox.accept), so seen.log names it
        # already: with the 200 sent before the fsync, it would name it only when the turn completes.
        assert "940" in [line.split()[0] for line in workspace.read_text(SEEN_LOG).splitlines()]
        assert [item.source_id for item in Inbox(workspace).pending()] == ["940"]  # a crash now: answered at start
    finally:
        release.set()
    fake.wait_for(lambda: "kept" in texts(fake), timeout=10)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_webhook_address_in_use_ends_the_start_with_one_line(fake, start_bot, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        hook = {"listen": "127.0.0.1", "port": port, "url": "https://bot.example.org/telegram"}
        bot = start_bot(mode="webhook", webhook={**hook, "secret_token": "s3cret-token-0123456789"})
        assert bot.join(20) == 1
    gc.collect()  # tornado's bind_sockets leaves the socket it could not bind to the collector (the process ends)
    err = capsys.readouterr().err
    assert f"telegram: the webhook cannot listen on 127.0.0.1:{port}: " in err and "Traceback" not in err
    assert not fake.calls("setWebhook")


def test_webhook_secret_is_reused_across_restarts(fake, start_bot, workspace):
    port = free_port()
    workspace.write_text("state/webhook_secret", "kept-secret-from-last-run-0123456789\n")
    start_bot(
        mode="webhook",
        webhook={"listen": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}/telegram", "secret_token": ""},
    )
    registered = fake.wait_for(lambda: fake.calls("setWebhook"), timeout=10)
    assert registered[0]["params"]["secret_token"] == "kept-secret-from-last-run-0123456789"


def test_short_webhook_secret_is_a_config_error(tmp_path):
    import json

    from tests.cli_inprocess import run_cli

    (tmp_path / "config.json").write_text(json.dumps({"telegram": {"webhook": {"secret_token": "abc"}}}))
    proc = run_cli("config", "validate", "--config", str(tmp_path / "config.json"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "secret_token" in proc.stdout + proc.stderr


def test_an_album_posted_to_the_webhook_is_one_turn(fake, start_bot, chat_server, workspace):
    """Webhook mode stores each part when its handler runs: the album's first turn stores the rest itself."""
    port, secret = free_port(), "s3cret-token-0123456789"
    hook = {"listen": "127.0.0.1", "port": port, "url": f"http://127.0.0.1:{port}/telegram", "secret_token": secret}
    start_bot(mode="webhook", webhook=hook)
    chat_server.enqueue('{"reply": "Both files filed."}')
    for number, name in ((910, "a.pdf"), (911, "b.pdf")):
        part = update(number, "")
        del part["message"]["text"]
        ref = fake.add_file(f"%PDF-1.4 {name}".encode(), f"documents/{name}")
        part["message"].update(document={**ref, "file_name": name}, media_group_id="W1")
        assert post(port, part, secret=secret).status_code == 200
    fake.wait_for(lambda: "Both files filed." in texts(fake), timeout=10)
    (request,) = chat_server.chat_requests
    prompt = request["messages"][-1]["content"]
    assert "a.pdf" in prompt and "b.pdf" in prompt
    assert texts(fake) == ["Both files filed."]
    assert sorted(p.split("/")[-1] for p in workspace.list("inbox/**/*.pdf")) == ["a.pdf", "b.pdf"]


def test_a_flood_of_forged_posts_costs_the_log_a_few_lines(fake, start_bot, chat_server, caplog):
    """300 POSTs with a wrong secret wrote two lines each to the bot's log (the refusal and Tornado's access
    line), without a bound: the log that holds the bot's own history rolled over for an outsider. Each kind of
    line is now bounded as the web page's are (20 a minute), and the owner's update is still answered."""
    import logging

    caplog.set_level(logging.INFO)
    port = free_port()
    secret = "s3cret-token-0123456789"
    start_bot(
        mode="webhook",
        webhook={
            "listen": "127.0.0.1",
            "port": port,
            "url": f"http://127.0.0.1:{port}/telegram",
            "secret_token": secret,
        },
    )
    fake.wait_for(lambda: fake.calls("setWebhook"), timeout=10)
    with requests.Session() as session:
        post(port, update(919, "forged"), secret="wrong")  # the server is up
        for n in range(300):
            forged = session.post(
                f"http://127.0.0.1:{port}/telegram",
                json=update(920 + n, "forged"),
                headers={"X-Telegram-Bot-Api-Secret-Token": f"wrong-{n}"},
                timeout=5,
            )
            assert forged.status_code == 403
    chat_server.enqueue('{"reply": "Still here."}')
    assert post(port, update(1300, "hello"), secret=secret).status_code == 200
    fake.wait_for(lambda: "Still here." in texts(fake), timeout=10)
    refused = [r for r in caplog.records if "403" in r.getMessage() or "without the right secret" in r.getMessage()]
    assert 2 <= len(refused) <= 60, len(refused)


SECRET = "s3cret-token-0123456789"


def webhook_bot(start_bot) -> int:
    """A bot in webhook mode on a free port (secret ``SECRET``): its port."""
    port = free_port()
    start_bot(
        mode="webhook",
        webhook={
            "listen": "127.0.0.1",
            "port": port,
            "url": f"http://127.0.0.1:{port}/telegram",
            "secret_token": SECRET,
        },
    )
    return port


def turn(fake, chat_server, port: int, text: str, reply: str) -> list[dict]:
    """The owner's message ``text`` posted to the webhook and answered ``reply``: the model's messages for it."""
    chat_server.enqueue(json.dumps({"reply": reply}))
    assert post(port, fake.send_message(text), secret=SECRET).status_code == 200
    fake.wait_for(lambda: reply in texts(fake), timeout=10)
    return chat_server.chat_requests[-1]["messages"]


def test_a_command_posted_again_runs_once(fake, start_bot, chat_server):
    """Telegram posts an update again when our 200 did not reach it: a message was taken once (the inbox's ids),
    but a command ran again: a /new posted again after the next turn began a third conversation, so the model
    no longer saw that turn (fails so without the note of commands taken, checked)."""
    port = webhook_bot(start_bot)
    turn(fake, chat_server, port, "The city is Rome.", "Fine.")
    new = fake.send_message("/new")
    assert post(port, new, secret=SECRET).status_code == 200
    fake.wait_for(lambda: any(t.startswith("Started a new conversation") for t in texts(fake)), timeout=10)
    turn(fake, chat_server, port, "Now it is Oslo.", "Right, Oslo.")
    assert post(port, new, secret=SECRET).status_code == 200  # our 200 was lost: Telegram posts it again
    seen = turn(fake, chat_server, port, "Which city?", "Oslo.")
    assert "Now it is Oslo." in json.dumps(seen)  # still the conversation /new began
    assert sum(t.startswith("Started a new conversation") for t in texts(fake)) == 1, texts(fake)


def test_a_button_press_posted_again_is_acted_on_once(fake, start_bot, chat_server, caplog):
    """/reset's "Clear history" pressed once, its update posted again after the next turn: it cleared that turn
    too (fails so without the note of presses taken, checked)."""
    caplog.set_level(logging.INFO)
    port = webhook_bot(start_bot)
    turn(fake, chat_server, port, "The city is Rome.", "Fine.")
    assert post(port, fake.send_message("/reset"), secret=SECRET).status_code == 200
    question = fake.wait_for(lambda: next((m for m in fake.messages(OWNER) if m.get("reply_markup")), None))
    press = fake.callback_query(OWNER, "reset:yes", question["message_id"])

    def edits() -> int:  # the question's message edited to say what the press did (after doing it)
        return sum(c["params"].get("message_id") == question["message_id"] for c in fake.calls("editMessageText"))

    assert post(port, press, secret=SECRET).status_code == 200
    fake.wait_for(edits, timeout=10)
    turn(fake, chat_server, port, "Now it is Oslo.", "Right, Oslo.")
    assert post(port, press, secret=SECRET).status_code == 200  # our 200 was lost: Telegram posts it again
    # A press is handled at once, beside the chat's order: done with it (again, or passed over) before the turn.
    fake.wait_for(lambda: edits() > 1 or f"{press['update_id']} came again" in caplog.text)
    seen = turn(fake, chat_server, port, "Which city?", "Oslo.")
    assert "Now it is Oslo." in json.dumps(seen)  # not cleared again
    assert len(fake.calls("answerCallbackQuery")) == 1
