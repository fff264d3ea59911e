"""Pure parts of the Signal frontend: Markdown to text styles, splitting, events, rules; the client
against the fake daemon (JSON-RPC single, batch, errors, both event forms)."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import datetime, timezone
from datetime import time as dtime
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.config.settings import Settings, SignalSettings
from messaging_llm_bot.channels.signal.client import (
    SignalClient,
    SignalRpcError,
    SignalUnavailable,
    unwrap_event,
)
from messaging_llm_bot.channels.signal.format import render_signal, styles_of
from messaging_llm_bot.channels.signal.settings import (
    SignalMessage,
    addressed_to_bot,
    model_text,
    parse_event,
    recipient_params,
)
from messaging_llm_bot.conversation.jobs import next_daily
from messaging_llm_bot.conversation.markup import inline_links
from messaging_llm_bot.conversation.routes import channel_of
from tests.fakes.signal_daemon import FakeSignalDaemon
from tests.signal_harness import BOT, GROUP, OWNER

UUID = "0f0e0d0c-0b0a-4000-8000-000000000001"


def styled(part) -> list[tuple[str, str]]:
    raw = part.text.encode("utf-16-le", "surrogatepass")
    out = []
    for item in styles_of(part.entities):
        start, length, style = item.split(":")
        out.append((raw[2 * int(start) : 2 * (int(start) + int(length))].decode("utf-16-le", "surrogatepass"), style))
    return out


def test_markdown_becomes_styles_counted_in_utf16_units():
    [part] = render_signal("😀 **bold** _it_ ~~gone~~ `x = 1` ||secret||")
    assert "**" not in part.text and "`" not in part.text and "~~" not in part.text
    assert styled(part) == [
        ("bold", "BOLD"),
        ("it", "ITALIC"),
        ("gone", "STRIKETHROUGH"),
        ("x = 1", "MONOSPACE"),
        ("secret", "SPOILER"),
    ]


def test_links_keep_their_url_and_later_styles_shift():
    [part] = render_signal("see [the docs](https://example.org/a) and **this**")
    assert part.text == "see the docs (https://example.org/a) and this"
    assert styled(part) == [("this", "BOLD")]
    # A bare URL is not written twice.
    text, entities = inline_links(
        "https://x.y", [{"type": "text_link", "offset": 0, "length": 11, "url": "https://x.y"}]
    )
    assert text == "https://x.y"


def test_long_text_splits_on_sentences_below_2000_utf8_bytes():
    sentence = "Ünïcode sentence with umlauts, number {}. "
    text = "".join(sentence.format(i) for i in range(120))  # one paragraph, no newlines
    parts = render_signal(text)
    assert len(parts) >= 3
    assert all(len(p.text.encode("utf-8")) <= 2000 for p in parts)
    assert all(p.text.endswith(".") for p in parts)  # cut after a sentence, not inside a word
    assert " ".join(p.text for p in parts) == text.strip()


def test_a_style_across_a_cut_is_clipped_into_each_part():
    text = "**" + " ".join(["bold."] * 600) + "**"
    parts = render_signal(text)
    assert len(parts) >= 2
    for part in parts:
        [(content, style)] = styled(part)
        assert style == "BOLD" and content == part.text


def test_events_in_every_form_unwrap_to_the_receive_object():
    daemon = FakeSignalDaemon(BOT)
    event = daemon.envelope(OWNER, "hi")
    assert unwrap_event(event) == event
    assert unwrap_event({"jsonrpc": "2.0", "method": "receive", "params": event}) == event
    subscribed = {"jsonrpc": "2.0", "method": "receive", "params": {"subscription": 0, "result": event}}
    assert unwrap_event(subscribed) == event
    assert unwrap_event({"jsonrpc": "2.0", "method": "other", "params": event}) is None
    assert unwrap_event({"jsonrpc": "2.0", "result": {}, "id": 1}) is None


def test_the_event_stream_yields_receive_objects_only():
    """Keep-alive comments, other events, data that is not JSON and an event without data are skipped; data
    over several lines is one event (the stream is read by httpx-sse)."""

    async def read(base_url: str, count: int) -> list[dict]:
        client, got = SignalClient(base_url, BOT), []
        try:
            async for obj in client.events():
                got.append(obj)
                if len(got) == count:
                    break
        finally:
            await client.close()
        return got

    with FakeSignalDaemon(BOT, keepalive_seconds=0.05) as daemon:
        first = daemon.message(OWNER, "one")
        daemon.deliver(": a comment\n\nevent:typing\ndata:{}\n\nevent:receive\ndata:not json\n\nevent:receive\n\n")
        split = daemon.envelope(OWNER, "two")
        lines = "".join(f"data: {line}\n" for line in json.dumps(split, indent=1).splitlines())
        daemon.deliver(f"event: receive\n{lines}\n")
        last = daemon.message(OWNER, "three")
        assert asyncio.run(asyncio.wait_for(read(daemon.base_url, 3), 10)) == [first, split, last]


def test_parse_event_keeps_data_messages_only():
    daemon = FakeSignalDaemon(BOT)
    msg = parse_event(daemon.envelope(OWNER, "hello", group_id=GROUP))
    assert msg.sender == OWNER and msg.chat == GROUP and msg.conversation_id == f"sig:{GROUP}"
    assert msg.source_id == f"sig:{msg.uuid}:{msg.timestamp}" and msg.kind() == "text"
    hidden = parse_event(daemon.envelope(OWNER, "hi", number=False, uuid=UUID))
    assert hidden.number is None and hidden.sender == UUID and hidden.conversation_id == f"sig:{UUID}"
    receipt = {"envelope": {"sourceNumber": OWNER, "timestamp": 1, "receiptMessage": {"isRead": True}}}
    typing = {"envelope": {"sourceNumber": OWNER, "timestamp": 1, "typingMessage": {"action": "STARTED"}}}
    reaction = daemon.envelope(OWNER, None)
    reaction["envelope"]["dataMessage"]["reaction"] = {"emoji": "👍"}
    group_update = daemon.envelope(OWNER, None, group_id=GROUP)
    assert [parse_event(e) for e in (receipt, typing, reaction, group_update, {})] == [None] * 5


def _signal(section: dict) -> SignalSettings:
    """The ``signal`` record of a config holding ``section``."""
    return Settings.from_config({"signal": section}).signal


def test_allowlist_is_deny_by_default_and_takes_numbers_or_uuids():
    assert not _signal({}).allows(OWNER) and not _signal({}).allows(UUID)
    settings = _signal({"allowed": [UUID.upper(), OWNER]})
    assert settings.allows(UUID) and settings.allows(OWNER)
    assert not settings.allows("+15559999999") and not settings.allows("aaaaaaaa-0b0a-4000-8000-000000000001")
    assert settings.owner_id == UUID  # the first allowed, normalised
    assert settings.is_owner(UUID) and not settings.is_owner(OWNER)


def test_group_rules_and_mentions():
    settings = _signal({"account": BOT, "allowed": [OWNER]})
    plain = SignalMessage(OWNER, None, 1, "hello", group_id=GROUP)
    mention_bot = {"number": BOT, "uuid": None, "start": 0, "length": 1, "name": BOT}
    mention_anna = {"number": "+15552220000", "start": 6, "length": 1, "name": "Anna"}
    asked = SignalMessage(
        OWNER, None, 2, "\ufffc ask \ufffc please", group_id=GROUP, mentions=[mention_bot, mention_anna]
    )
    quoted = SignalMessage(OWNER, None, 3, "and?", group_id=GROUP, quote={"authorNumber": BOT, "id": 5})
    assert not addressed_to_bot(plain, settings)
    assert addressed_to_bot(asked, settings) and addressed_to_bot(quoted, settings)
    assert addressed_to_bot(SignalMessage(OWNER, None, 4, "/help", group_id=GROUP), settings)
    assert addressed_to_bot(plain, _signal({"account": BOT, "group_mode": "all"}))
    assert model_text(asked, BOT) == "ask @Anna please"
    assert recipient_params(OWNER) == {"recipient": [OWNER]} and recipient_params(GROUP) == {"groupId": GROUP}


def test_reminder_channels_and_daily_jobs():
    assert [channel_of(c) for c in (12345, "-100", f"sig:{OWNER}", "console", None)] == [
        "telegram",
        "telegram",
        "signal",
        "console",
        "none",
    ]
    berlin = ZoneInfo("Europe/Berlin")
    before_dst = datetime(2026, 3, 28, 12, 0, tzinfo=timezone.utc)
    nxt = next_daily(dtime(7, 30, tzinfo=berlin), before_dst)
    assert nxt.astimezone(berlin).hour == 7 and nxt.date().isoformat() == "2026-03-29"
    assert nxt.utcoffset().total_seconds() == 7200  # summer time started that night


def test_client_single_batch_errors_and_unreachable():
    async def scenario(base_url: str) -> None:
        client = SignalClient(base_url, BOT)
        try:
            assert (await client.rpc("version"))["version"]
            ok, bad = await client.batch([("version", None), ("send", {"recipient": [OWNER]})])
            assert ok["version"] and isinstance(bad, SignalRpcError) and bad.code == -1
            with pytest.raises(SignalRpcError) as err:
                await client.rpc("send", {"recipient": [OWNER], "message": "x", "textStyle": ["0:1:LOUD"]})
            assert "Invalid style" in err.value.message
            with pytest.raises(SignalRpcError) as err:
                await client.rpc("nope")
            assert err.value.code == -32601
        finally:
            await client.close()

    with FakeSignalDaemon(BOT) as daemon:
        asyncio.run(scenario(daemon.base_url))
        assert daemon.rpc[0]["params"]["account"] == BOT  # a multi-account daemon needs it
        port = daemon.port

    async def down() -> None:
        client = SignalClient(f"http://127.0.0.1:{port}", BOT)
        try:
            with pytest.raises(SignalUnavailable):
                await client.rpc("version")
            with pytest.raises(SignalUnavailable):
                async for _ in client.events():
                    pass
        finally:
            await client.close()

    asyncio.run(down())


def test_fake_daemon_speaks_http_like_signal_cli():
    import http.client

    def ask(method: str, path: str, body: bytes | None = None, **headers: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=5)
        try:
            conn.request(method, path, body=body, headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.read()
        finally:
            conn.close()

    with FakeSignalDaemon(BOT) as daemon:
        assert ask("POST", "/api/v1/rpc", b"{}", **{"Content-Type": "text/plain"})[0] == 415
        _, body = ask("POST", "/api/v1/rpc", b"not json", **{"Content-Type": "application/json"})
        assert json.loads(body)["error"]["code"] == -32700
        note = json.dumps({"jsonrpc": "2.0", "method": "version"}).encode()  # no id: a notification
        assert ask("POST", "/api/v1/rpc", note, **{"Content-Type": "application/json"})[0] == 201
        assert ask("GET", "/api/v1/events", Host="evil.example")[0] == 421


def test_an_attachments_answer_is_cut_while_read_past_max_bytes():
    """getAttachment's answer holds the whole file base64: with ``max_bytes`` the read stops there
    (assistant_framework/jsonrpc_http.py) instead of holding any size in memory; without it the file comes whole."""
    from assistant_framework.http_deadline import BodyTooLarge

    async def scenario(base_url: str, att_id: str) -> None:
        client = SignalClient(base_url, BOT)
        try:
            with pytest.raises(BodyTooLarge):
                await client.rpc("getAttachment", {"id": att_id, "recipient": OWNER}, max_bytes=100_000)
            whole = await client.rpc("getAttachment", {"id": att_id, "recipient": OWNER}, max_bytes=300_000)
            assert base64.b64decode(whole["data"]) == b"x" * 200_000
        finally:
            await client.close()

    with FakeSignalDaemon(BOT) as daemon:
        att = daemon.add_attachment(b"x" * 200_000, "application/pdf", filename="big.pdf")
        asyncio.run(scenario(daemon.base_url, att["id"]))
