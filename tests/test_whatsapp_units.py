"""The WhatsApp channel's pure parts (no process, no socket): the webhook's signature and handshake checks,
Meta's payload read (statuses and other numbers passed over), the 24-hour window kept across a restart, and a
reply as text parts and as template parameters within Meta's bounds. The same guarantees through the real bot
process: tests/test_whatsapp_bot.py."""

from __future__ import annotations

import time

from assistant_framework.config.settings import WhatsAppSettings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.whatsapp.channel import template_parts
from messaging_llm_bot.channels.whatsapp.format import MAX_TEXT_CHARS, split, whatsapp_text
from messaging_llm_bot.channels.whatsapp.message import messages_of
from messaging_llm_bot.channels.whatsapp.webhook import signed, verified
from messaging_llm_bot.channels.whatsapp.window import ServiceWindow
from tests.fakes.graph_api import FakeGraphAPI, signature

SECRET = "the-app-secret-0123456789"
BODY = b'{"object": "whatsapp_business_account", "entry": []}'


def _config(**changes: object) -> WhatsAppSettings:
    base = dict(
        phone_number_id="106540352242922",
        access_token="t",
        verify_token="verify-me-please",
        allowed=("+491701234567",),
        owner="+491701234567",
        base_url="http://127.0.0.1:1/v21.0",
    )
    return WhatsAppSettings(**{**base, **changes})  # type: ignore[arg-type]


def test_a_signature_counts_only_as_the_hmac_of_the_exact_body_with_the_app_secret() -> None:
    assert signed(SECRET, BODY, signature(SECRET, BODY))
    assert not signed(SECRET, BODY, None) and not signed(SECRET, BODY, "")
    assert not signed(SECRET, BODY + b" ", signature(SECRET, BODY))  # one byte more: another body
    assert not signed(SECRET, BODY, signature("another-secret", BODY))
    assert not signed(SECRET, BODY, signature(SECRET, BODY).replace("sha256=", "sha1="))
    assert not signed("", BODY, signature("", BODY))  # no secret configured: nothing passes


def test_the_handshake_needs_subscribe_and_the_verify_token() -> None:
    config = _config()
    assert verified(config, "subscribe", "verify-me-please")
    assert not verified(config, "subscribe", "verify-me-not")
    assert not verified(config, "subscribe", None) and not verified(config, "unsubscribe", "verify-me-please")
    assert not verified(_config(verify_token=""), "subscribe", "")


def test_messages_of_this_number_are_read_and_statuses_and_other_numbers_passed_over() -> None:
    graph = FakeGraphAPI()  # only its payload builders: no server is started
    text = graph.inbound("491701234567", "text", {"body": "hi"}, context={"from": "1", "id": "wamid.EARLIER"})
    voice = graph.inbound("491701234567", "audio", {"id": "123", "mime_type": "audio/ogg", "voice": True})
    payload = graph.message_event("491701234567", text)
    payload["entry"][0]["changes"][0]["value"]["messages"].append({**voice, "from": "491701234567"})
    status = graph.status_event("wamid.OUT1", "491701234567", "delivered")
    other = graph.message_event("491701234567", graph.inbound("491701234567", "text", {"body": "x"}))
    other["entry"][0]["changes"][0]["value"]["metadata"]["phone_number_id"] = "999"
    read = messages_of(payload, graph.phone_number_id)
    assert [(m.kind, m.text, m.reply_to) for m in read] == [("text", "hi", "wamid.EARLIER"), ("audio", "", None)]
    assert read[1].media is not None and (read[1].media.kind, read[1].media.ref) == ("voice", "123")
    assert messages_of(status, graph.phone_number_id) == [] and messages_of(other, graph.phone_number_id) == []
    assert messages_of({"object": "page"}, graph.phone_number_id) == []


def test_the_window_is_open_24_hours_from_the_last_message_and_kept_across_a_restart(tmp_path) -> None:
    workspace = Workspace(tmp_path)
    window = ServiceWindow(workspace)
    now = time.time()
    assert not window.is_open("491701234567")  # never wrote: only a template may reach them
    window.saw("491701234567", now - 25 * 3600)
    assert not window.is_open("491701234567", now)
    window.saw("491701234567", now - 3600)
    window.saw("491701234567", now - 30 * 3600)  # an older message delivered late does not close it
    assert window.is_open("491701234567", now) and not window.is_open("491701234567", now + 23.5 * 3600)
    assert ServiceWindow(Workspace(tmp_path)).is_open("491701234567", now)  # a restart knows it


def test_a_reply_becomes_text_parts_and_template_parameters_within_metas_bounds() -> None:
    assert whatsapp_text("**Paris** is _big_, see [the map](https://example.org/map)") == (
        "*Paris* is _big_, see the map (https://example.org/map)"
    )
    reply = "\n\n".join(f"Paragraph {n}: " + "word " * 300 for n in range(12))
    parts = split(reply)
    assert len(parts) > 1 and all(len(p) <= MAX_TEXT_CHARS for p in parts)
    params = template_parts(reply)
    assert all(len(p) <= 1024 and "\n" not in p and "     " not in p for p in params)
    assert " ".join(params).split() == reply.split()  # every word, once, in order


def test_the_allowlist_and_the_owner_are_read_as_whatsapps_ids() -> None:
    """Meta names a sender by its digits; the config writes E.164 with +: the record answers in Meta's terms."""
    config = WhatsAppSettings(allowed=("+491701234567", "+4915112345678"))
    assert config.allowed_ids == ("491701234567", "4915112345678")
    assert config.allows("4915112345678") and not config.allows("+4915112345678") and not config.allows("49")
    assert config.owner_id == "491701234567" and config.is_owner("491701234567")  # the first allowed
    assert not config.is_owner("4915112345678")
    chosen = WhatsAppSettings(allowed=("+491701234567", "+4915112345678"), owner="+4915112345678")
    assert chosen.owner_id == "4915112345678" and chosen.is_owner("4915112345678")
    outside = WhatsAppSettings(allowed=("+491701234567",), owner="+4915112345678")
    assert not outside.is_owner("4915112345678")  # an owner not in the allowlist is not served as one
    assert WhatsAppSettings().owner_id is None and not WhatsAppSettings().is_owner("")
