"""The web page's Control section over real HTTP (docs/web.md#control): the owner's chat's model and the
pairing codes waiting, set with the form token only, through the same code as /model and /pair."""

from __future__ import annotations

import json
import re

import pytest
import requests

from assistant_framework.memory.log import safe_conversation_id
from assistant_framework.web import WebServer, standalone_parts
from messaging_llm_bot.agent.runner_choice import RunnerChoices
from messaging_llm_bot.conversation.pairing import PAIRING_FILE, PairingStore
from messaging_llm_bot.serve.control_page import control_mount
from tests.web_site import WEB_TOKEN, write_config

OWNER_CHAT = "tg:42"  # telegram's only allowed id: the owner's private chat, the home chat
MODEL_FILE = f"conversations/{safe_conversation_id(OWNER_CHAT)}/model.json"  # what the next turn reads


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("control")
    config = write_config(tmp / "config", tmp / "plugins")
    runners = [
        {"name": "big", "base_url": "http://127.0.0.1:9/v1", "model": "big-model"},
        {"name": "small", "base_url": "http://127.0.0.1:9/v1", "model": "small-model"},
    ]
    (config / "llm.json").write_text(json.dumps({"runners": runners}))
    for collector in (config / "collectors").iterdir():  # the shared config's test collectors are not needed here
        collector.unlink()
    parts = standalone_parts(config, tmp / "ws")
    server = WebServer(parts, host="127.0.0.1", port=0, mounts=[control_mount(config)])
    server.start()
    yield server, parts.workspace, config
    server.stop()
    parts.close()


@pytest.fixture
def page(site):
    """A signed-in browser session, the workspace and config, with no model choice and no code waiting."""
    server, ws, config = site
    RunnerChoices(ws).set(OWNER_CHAT, None)
    ws.delete(PAIRING_FILE)
    (config / "local").mkdir(exist_ok=True)
    for local in (config / "local").iterdir():
        local.unlink()
    session = requests.Session()
    assert (
        session.get(f"http://127.0.0.1:{server.port}/control?token={WEB_TOKEN}", allow_redirects=False).status_code
        == 302
    )
    return session, f"http://127.0.0.1:{server.port}", ws, config


def _xsrf(session: requests.Session, base: str) -> str:
    return re.search(r'name="_xsrf" value="([^"]+)"', session.get(f"{base}/control").text).group(1)


def test_the_page_lists_the_runners_the_choice_and_who_waits_but_no_code(page):
    session, base, ws, _ = page
    code = PairingStore(ws).issue("telegram", "777", 60)
    stored = ws.read_json(PAIRING_FILE)["pending"][0]
    html = session.get(f"{base}/control").text
    assert "big-model" in html and "small-model" in html
    assert re.search(r'id="current-model">big<', html)
    assert "777" in html and "telegram" in html
    for secret in (code, code.replace("-", ""), stored["digest"], stored["salt"]):
        assert secret not in html
    data = session.get(f"{base}/api/control", headers={"Authorization": f"Bearer {WEB_TOKEN}"}).json()
    assert [r["name"] for r in data["runners"]] == ["big", "small"]
    assert data["pairing"][0]["sender"] == "777" and "digest" not in json.dumps(data)
    assert requests.get(f"{base}/control").status_code == 401  # not signed in


def test_a_waiting_senders_direction_characters_are_shown_as_marks_and_sent_back_as_they_are(page):
    """An id holding a right-to-left mark (an address: "ann<RLM> 1 2@example.com") or an override is shown with
    their marks, as on every page (web/base.py: page_escape); the revoke form sends it back as stored. The list
    is not paged: at most 50 wait (conversation/pairing.py: MAX_PENDING)."""
    session, base, ws, _ = page
    sender = "ann\u200f 1 2@example.com \u202eexe.pdf"
    assert PairingStore(ws).issue("email", sender, 60)
    html = session.get(f"{base}/control").text
    assert "ann‹U+200F› 1 2@example.com ‹U+202E›exe.pdf" in html
    assert not re.search("[\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]", html.replace(f'value="{sender}"', ""))
    assert f'name="sender" value="{sender}"' in html


def test_a_post_without_the_form_token_changes_nothing(page):
    session, base, ws, config = page
    code = PairingStore(ws).issue("telegram", "777", 60)
    assert session.post(f"{base}/control/model", data={"runner": "small"}).status_code == 403
    assert session.post(f"{base}/control/approve", data={"code": code, "role": "guest"}).status_code == 403
    assert session.post(f"{base}/control/revoke", data={"sender": "777"}).status_code == 403
    assert RunnerChoices(ws).get(OWNER_CHAT) is None
    assert not ws.exists(MODEL_FILE)
    assert [p.sender for p in PairingStore(ws).pending()] == ["777"]
    assert list((config / "local").iterdir()) == []


def test_a_switch_is_what_the_next_turns_model_file_says_and_default_goes_back(page):
    session, base, ws, _ = page
    token = _xsrf(session, base)
    reply = session.post(f"{base}/control/model", data={"runner": "small", "_xsrf": token})
    assert "now uses small" in reply.text
    assert ws.read_json(MODEL_FILE) == {"runner": "small"}
    assert re.search(r'id="current-model">small<', session.get(f"{base}/control").text)
    refused = session.post(f"{base}/control/model", data={"runner": "huge", "_xsrf": token})
    assert "no model named huge" in refused.text and "big, small" in refused.text
    assert RunnerChoices(ws).get(OWNER_CHAT) == "small"  # an unknown name changes nothing
    session.post(f"{base}/control/model", data={"runner": "default", "_xsrf": token})
    assert not ws.exists(MODEL_FILE)


def test_an_approval_lands_in_config_local_and_a_wrong_code_or_revoke_does_not(page):
    session, base, ws, config = page
    store = PairingStore(ws)
    code = store.issue("telegram", "777", 60)
    other = store.issue("telegram", "888", 60)
    token = _xsrf(session, base)
    wrong = session.post(f"{base}/control/approve", data={"code": "AAA-AAA", "role": "guest", "_xsrf": token})
    assert "Nothing changed" in wrong.text and list((config / "local").iterdir()) == []
    done = session.post(f"{base}/control/approve", data={"code": code.lower(), "role": "guest", "_xsrf": token})
    assert "Approved: telegram user 777" in done.text
    local = json.loads((config / "local" / "telegram.json").read_text())
    assert local["allowed_user_ids"] == [42, 777]
    assert json.loads((config / "telegram.json").read_text())["allowed_user_ids"] == [42]  # the tracked file
    assert store.take_approved("telegram", "777")  # the running bot applies it at 777's next message
    again = session.post(f"{base}/control/approve", data={"code": code, "role": "guest", "_xsrf": token})
    assert "Nothing changed" in again.text  # single use
    session.post(f"{base}/control/revoke", data={"sender": "888", "_xsrf": token})
    assert store.pending() == []
    late = session.post(f"{base}/control/approve", data={"code": other, "role": "guest", "_xsrf": token})
    assert "Nothing changed" in late.text
    assert json.loads((config / "local" / "telegram.json").read_text())["allowed_user_ids"] == [42, 777]
