"""Every HTTP read of the bot has a deadline for the whole exchange, not only for each read (issue 26.8).

A server that sends a little before each read (a header line a byte at a time, whitespace before a
JSON body, a body ended by a close that never comes) never trips a per-read timeout. The model
client's own cases are in test_llm_deadline.py; here the other readers: the collectors' feed and
calendar downloads (through the ``collectors run`` CLI), transcription (through the Telegram bot),
embeddings (through memory search), and the web skill.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from assistant_framework.config.settings import EmbeddingsSettings
from assistant_framework.http_deadline import Deadline, deadline_session
from assistant_framework.skills import SkillContext, SkillManager
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from messaging_llm_bot.llm.embeddings import EmbeddingClient, EmbeddingError
from tests.fakes.feed_server import StaticHTTPServer
from tests.telegram_harness import OWNER, texts
from tests.waiting import wait_until

GOOD = (Path(__file__).parent / "fixtures" / "collectors" / "news_rss2.xml").read_bytes()
TRICKLE = {"every": 0.1, "for": 20}
SHORT = b"0123456789" * 2


def _collectors_cli(tmp_path: Path, name: str, settings: dict) -> list[str]:
    config = tmp_path / "config"
    (config / "collectors").mkdir(parents=True)
    (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    (config / "collectors" / f"{name}.json").write_text(json.dumps({"enabled": True, **settings}))
    Workspace(tmp_path / "ws")
    return ["--config", str(config), "--workspace", str(tmp_path / "ws")]


@pytest.fixture(scope="module")
def feeds():
    with StaticHTTPServer() as server:
        server.add("/news.xml", GOOD, content_type="application/rss+xml")
        # Headers a byte every 50 ms (10,000 of them), and a body without a length dripping the same.
        server.add("/slow-head.xml", GOOD, content_type="application/rss+xml", drip_head=0.05)
        server.add("/slow-close.xml", GOOD, content_type="application/rss+xml", drip=0.05, framing="close")
        server.add(
            "/slow-head.ics", b"BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", content_type="text/calendar", drip_head=0.05
        )
        yield server


def test_feeds_trickling_their_headers_or_a_close_delimited_body_miss_their_deadline(tmp_path, feeds, capsys):
    urls = [feeds.url(p) for p in ("/slow-head.xml", "/slow-close.xml", "/news.xml")]
    opts = _collectors_cli(tmp_path, "rss", {"feeds": urls, "fetch_timeout_seconds": 0.5, "timeout_seconds": 30})
    assert main(["collectors", "run", "rss", *opts]) == 0
    out = capsys.readouterr().out
    for slow in urls[:2]:
        assert f"warning: feed {slow}: download not finished within 0.5s (fetch_timeout_seconds)" in out, out
    items = Workspace(tmp_path / "ws").read_jsonl("collectors/rss/items.jsonl")
    assert items and all(item["feed_url"] == urls[2] for item in items)  # the good feed is saved


def test_a_calendar_trickling_its_headers_misses_its_deadline(tmp_path, feeds, capsys):
    url = feeds.url("/slow-head.ics")
    opts = _collectors_cli(
        tmp_path,
        "calendar",
        {"sources": [{"name": "slow", "url": url}], "fetch_timeout_seconds": 0.3, "timeout_seconds": 30},
    )
    assert main(["collectors", "run", "calendar", *opts]) == 1  # its only source failed
    out = capsys.readouterr().out
    assert "download not finished within 0.3s" in out, out


def test_a_trickling_transcription_ends_at_its_timeout_through_the_bot(fake, start_bot, chat_server):
    def with_transcription(config):
        config["llm"]["transcription"] = {
            "base_url": chat_server.base_url,
            "model": "whisper-1",
            "timeout_seconds": 0.3,  # no transcription has to finish
        }

    start_bot(config_patch=with_transcription)
    chat_server.set_transcription({"text": "late words", "trickle": TRICKLE})
    fake.send_voice(OWNER, b"OggS fake opus")
    shown = fake.wait_for(lambda: [t for t in texts(fake) if "could not transcribe" in t], timeout=15)
    assert "did not finish within 0.3 s" in shown[0], shown
    assert chat_server.chat_requests == []  # no turn was started from a transcript that never came


@pytest.mark.parametrize("where", ["body", "head"])
def test_trickling_embeddings_end_at_their_timeout_and_search_falls_back(tmp_path, chat_server, where):
    from assistant_framework.memory import MemoryService

    chat_server.set_embeddings_handler(lambda texts: {"trickle": {**TRICKLE, "where": where}})
    settings = {"base_url": chat_server.base_url, "model": "e", "timeout_seconds": 0.2}  # waited out twice
    with pytest.raises(EmbeddingError, match="did not finish within 0.2 s"):
        EmbeddingClient(EmbeddingsSettings(**settings))(["parcel"])
    config = {"llm": {"embeddings": {"enabled": True, **settings}}, "memory": {"semantic_weight": 0.5}}
    service = MemoryService(
        Workspace(tmp_path / "ws"), config, embed=EmbeddingClient(EmbeddingsSettings(**settings)), start_worker=False
    )
    try:
        service.log_turn("1", "user", "the parcel arrives on Tuesday")
        hits = service.search("parcel")
    finally:
        service.close()
    assert hits and "parcel" in hits[0].snippet  # keyword search answered without the vectors


def test_the_web_skill_gives_up_on_a_page_trickling_its_headers(workspace, feeds):
    skills = SkillManager.from_config({}, workspace)
    context = SkillContext(
        config={"policy": {"allow_private_network": True}, "runtime": {"skill_timeouts": {"web": 1.5}}}
    )
    result = skills.run("web", {"url": feeds.url("/slow-head.xml")}, context)
    assert not result.ok and "did not answer within 1.2 s" in result.error, result


def test_a_connection_given_back_to_the_pool_is_forgotten_by_its_deadline(feeds):
    """A deadline that passes after its call gave the connection back must not cut that
    connection while another call uses it (the pool hands the same connection out again)."""
    from assistant_framework.http_deadline import read_body

    held = threading.Event()  # the body's first byte is sent, the rest when the first deadline has passed
    feeds.add("/held.txt", SHORT, content_type="text/plain", drip=0.001, hold=held)
    session = deadline_session()
    try:
        with Deadline(0.3) as first:
            assert session.get(feeds.url("/news.xml"), timeout=5).content == GOOD  # its connection is in the pool
            with Deadline(10) as second:
                response = session.get(feeds.url("/held.txt"), stream=True, timeout=5)  # the same connection
                wait_until(lambda: first.fired, timeout=10, what="the first deadline")  # it passes mid-body
                held.set()
                body = read_body(response, second, max_bytes=1000)
    finally:
        held.set()
    assert first.fired and not second.fired
    assert body == SHORT


def test_the_model_server_probe_of_setup_and_doctor_is_bounded_too(chat_server):
    from messaging_llm_bot.llm.probe import probe

    chat_server.models_trickle = {**TRICKLE, "where": "head"}
    result = probe(chat_server.base_url, timeout=0.3)
    assert not result.reachable and "no answer within 0.3 s" in (result.error or ""), result
    chat_server.models_trickle = None
    assert probe(chat_server.base_url, timeout=5).models == ["fake-model"]


def test_a_deadline_before_the_one_the_watchdog_waits_for_still_fires_at_its_time():
    """The watchdog is woken only for a deadline that comes first (a later one waits for its next look); a short
    exchange begun while a long one runs is still cut at its own time, not the long one's."""
    with Deadline(60):
        time.sleep(0.05)  # the watchdog thread now waits for the minute
        with Deadline(0.2) as short:
            wait_until(lambda: short.fired, timeout=10, what="the short deadline fired")
    assert any(t.name == "http-deadline-watchdog" for t in threading.enumerate())
