"""The built-in rss collector against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.collectors.state import load_state
from assistant_framework.config.settings import RuntimeSettings, Settings
from assistant_framework.workspace import Workspace
from tests.fakes.feed_server import StaticHTTPServer

FIXTURES = Path(__file__).parent / "fixtures" / "collectors"


@pytest.fixture
def server():
    with StaticHTTPServer() as srv:
        srv.add("/news.xml", (FIXTURES / "news_rss2.xml").read_bytes(), content_type="application/rss+xml", etag='"n1"')
        srv.add(
            "/blog.atom",
            (FIXTURES / "blog_atom.xml").read_bytes(),
            content_type="application/atom+xml",
            last_modified="Sun, 05 Jan 2025 18:30:02 GMT",
        )
        srv.add("/broken.xml", (FIXTURES / "broken_feed.xml").read_bytes(), content_type="text/html")
        srv.add("/old.rdf", (FIXTURES / "rdf_rss1.xml").read_bytes(), content_type="application/rdf+xml")
        yield srv


def runner_for(ws, feeds, **extra):
    config = {
        "runtime": {"timezone": "Europe/Berlin"},
        "collectors": {"rss": {"enabled": True, "feeds": feeds, **extra}},
    }
    manager = CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), ws)
    assert "rss" in manager.collectors, manager.errors
    return CollectorRunner(manager, ws, timezone="Europe/Berlin")


def test_rss_atom_and_rdf_are_collected_and_deduplicated(tmp_path, server):
    ws = Workspace(tmp_path / "ws")
    feeds = [server.url("/news.xml"), {"url": server.url("/blog.atom"), "name": "Ada"}, server.url("/old.rdf")]
    runner = runner_for(ws, feeds)

    first = runner.run_once("rss")
    assert first.outcome == "ok", first.error
    titles = [item["title"] for item in first.new_items]
    assert titles == [
        "Bridge reopens after repairs",
        "Library extends opening hours",
        "Notes on analytical engines",
        "An RDF item",
    ]
    assert first.new_items[0]["feed"] == "Town News"
    assert first.new_items[0]["summary"] == "The old bridge is open again."
    assert first.new_items[2]["feed"] == "Ada"
    assert first.new_items[2]["summary"] == "Punched cards & loops."
    items = ws.read_jsonl("collectors/rss/items.jsonl")
    # Feeds are fetched in parallel: items.jsonl is in the order they finished.
    assert sorted(i["id"] for i in items) == sorted(
        ["town-news-1", "town-news-2", "urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a", "https://old.example.org/a"]
    )
    digests = [p for p in ws.list("collectors/rss/digest/*.md")]
    assert len(digests) == 1 and re.fullmatch(r"collectors/rss/digest/\d{4}-\d{2}-\d{2}\.md", digests[0])
    digest = ws.read_text(digests[0])
    assert "### Town News" in digest and "- [Bridge reopens after repairs](https://news.example.org/bridge)" in digest
    assert digests[0] in first.written and "collectors/rss/items.jsonl" in first.written

    # Second run: the news feed answers 304 to If-None-Match, the Atom feed to If-Modified-Since.
    second = runner.run_once("rss")
    assert second.outcome == "ok"
    assert second.new_items == []
    assert server.requests_to("/news.xml")[-1].headers.get("If-None-Match") == '"n1"'
    assert server.requests_to("/news.xml")[-1].status == 304
    assert server.requests_to("/blog.atom")[-1].status == 304
    assert len(ws.read_jsonl("collectors/rss/items.jsonl")) == 4

    # The feed changes (new ETag): only the unseen entry is new, the old one is not repeated.
    server.add(
        "/news.xml", (FIXTURES / "news_rss2_more.xml").read_bytes(), content_type="application/rss+xml", etag='"n2"'
    )
    third = runner.run_once("rss")
    assert [i["title"] for i in third.new_items] == ["Power outage in the north district"]
    assert ws.read_json("collectors/rss/new.json")["items"][0]["id"] == "town-news-3"
    assert ws.read_text(digests[0]).count("Bridge reopens") == 1


def test_a_broken_feed_is_recorded_without_failing_the_others(tmp_path, server):
    ws = Workspace(tmp_path / "ws")
    feeds = [server.url("/broken.xml"), server.url("/missing.xml"), server.url("/news.xml")]
    runner = runner_for(ws, feeds)
    outcome = runner.run_once("rss")
    assert outcome.outcome == "ok"
    assert len(outcome.new_items) == 2
    assert any("broken.xml" in e and "not a valid" in e for e in outcome.errors)
    assert any("missing.xml" in e and "HTTP 404" in e for e in outcome.errors)
    status = ws.read_json("collectors/rss/feeds.json")
    assert status[server.url("/broken.xml")]["last_error"]
    assert status[server.url("/news.xml")]["last_error"] is None
    assert ws.read_jsonl("collectors/rss/runs.jsonl")[-1]["errors"] == outcome.errors


def test_every_feed_failing_fails_the_run_and_backs_off(tmp_path, server):
    ws = Workspace(tmp_path / "ws")
    runner = runner_for(ws, [server.url("/broken.xml")])
    outcome = runner.run_once("rss")
    assert outcome.outcome == "error"
    assert "broken.xml" in outcome.error
    assert load_state(ws, "rss").consecutive_failures == 1


def test_cursor_survives_a_new_runner(tmp_path, server):
    ws = Workspace(tmp_path / "ws")
    runner_for(ws, [server.url("/news.xml")]).run_once("rss")
    server.add(
        "/news.xml", (FIXTURES / "news_rss2.xml").read_bytes(), content_type="application/rss+xml", etag='"changed"'
    )
    again = runner_for(ws, [server.url("/news.xml")]).run_once("rss")
    assert server.requests_to("/news.xml")[-1].status == 200
    assert again.new_items == []
    assert load_state(ws, "rss").cursor["feeds"][server.url("/news.xml")]["etag"] == '"changed"'


def test_keyword_notify_rule_pushes_without_a_model(tmp_path, server):
    ws = Workspace(tmp_path / "ws")
    pushed = []
    config = {
        "collectors": {
            "rss": {
                "enabled": True,
                "feeds": [server.url("/news.xml")],
                "notify": [{"match": "keyword", "value": "library"}],
            }
        }
    }
    runner = CollectorRunner(
        CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), ws),
        ws,
        notify=lambda name, text: pushed.append(text),
    )
    runner.run_once("rss")
    assert pushed == ["rss: 1 new matching item\n- Library extends opening hours (Town News)"]


def test_bad_feed_config_is_a_load_error_naming_the_key(tmp_path):
    ws = Workspace(tmp_path / "ws")
    manager = CollectorManager.from_settings(
        RuntimeSettings(), {"rss": {"enabled": True, "feeds": [{"link": "x"}]}}, ws
    )
    assert "rss" not in manager.collectors
    assert "collectors.rss.feeds[0]" in {e.name: e.error for e in manager.errors}["rss"]


def test_entries_over_the_per_run_cap_do_not_come_back_later_as_new(tmp_path):
    # A big feed's first run keeps its newest max_items_per_feed entries; the older ones beyond
    # the cap must not turn up as "new" in the next runs (old posts in the digest, notices).
    entries = "".join(
        f"<item><guid>p{n}</guid><title>Post {n}</title><link>http://example.org/{n}</link></item>"
        for n in range(120, 0, -1)
    )  # newest first, as feeds are written
    feed = f'<?xml version="1.0"?><rss version="2.0"><channel><title>Big</title>{entries}</channel></rss>'.encode()
    with StaticHTTPServer() as srv:
        srv.add("/big.xml", feed, content_type="application/rss+xml")
        ws = Workspace(tmp_path / "ws")
        runner = runner_for(ws, [srv.url("/big.xml")], max_items_per_feed=50)
        first = runner.run_once("rss")
        assert [i["title"] for i in first.new_items][:2] == ["Post 120", "Post 119"] and len(first.new_items) == 50
        assert runner.run_once("rss").new_items == []
        srv.add(
            "/big.xml",
            feed.replace(
                b"<title>Big</title>", b"<title>Big</title><item><guid>p121</guid><title>Post 121</title></item>"
            ),
            content_type="application/rss+xml",
        )
        assert [i["title"] for i in runner.run_once("rss").new_items] == ["Post 121"]
