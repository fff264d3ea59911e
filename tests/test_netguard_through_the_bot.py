"""URL parser tricks through the bot (issue 34.12: the neighbour of test_web_skill.py's skill-level test).
The model writes the URL; the Telegram bot's ``web`` skill (network allowed without a question, so
only the SSRF guard stands in the way) refuses each trick, tells the model why, and the internal
server on 127.0.0.1 sees no request. The real Telegram bot against the fake Bot API."""

from __future__ import annotations

import json

import pytest

from tests.telegram_harness import texts
from tests.test_netguard_bypasses import _serve_page

#: Each one was read as 8.8.8.8 by one URL parser and as 127.0.0.1 by another (or hides the host).
TRICKS = [
    "http://127.0.0.1:{port}\\@8.8.8.8/admin",
    "http://8.8.8.8:80\\@127.0.0.1:{port}/admin",
    "http://8.8.8.8@127.0.0.1:{port}/admin",
    "http://127.0.0.1:{port}\t@8.8.8.8/admin",
    "http://127.0.0.1:{port}#@8.8.8.8/admin",
    "http://[::ffff:127.0.0.1]:{port}/admin",
]


@pytest.fixture
def page():
    server = _serve_page()
    yield server
    server.shutdown()
    server.server_close()


def test_url_parser_tricks_the_model_writes_never_reach_an_internal_server(fake, start_bot, chat_server, page):
    port = page.server_address[1]
    start_bot(config_patch=lambda c: c.update(policy={"capabilities": {"network": "allow"}}))
    for n, trick in enumerate(TRICKS, 1):
        url = trick.format(port=port)
        chat_server.enqueue(json.dumps({"skill": "web", "args": {"url": url}}), json.dumps({"reply": f"done {n}"}))
        fake.send_message(f"read {url}")
        fake.wait_for(lambda n=n: f"done {n}" in texts(fake), timeout=15)
        fed_back = str(chat_server.chat_requests[-1]["messages"][-1]["content"])
        assert "refused" in fed_back or "internal address" in fed_back, (url, fed_back)
        assert "internal admin page" not in fed_back
    assert page.seen == []  # not one request reached the internal server
