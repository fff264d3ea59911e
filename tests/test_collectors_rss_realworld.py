"""RSS collector on real-world feeds (tests/fixtures/realworld/feeds, see its README) over a real HTTP
server: clean text in titles, legacy encodings, relative links, content-keyed ids, slow servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from tests.fakes.feed_server import StaticHTTPServer

REAL = Path(__file__).parent / "fixtures" / "realworld" / "feeds"
GOOD = (Path(__file__).parent / "fixtures" / "collectors" / "news_rss2.xml").read_bytes()


def runner_for(ws, feeds, **extra):
    config = {
        "runtime": {"timezone": "Europe/Berlin"},
        "collectors": {"rss": {"enabled": True, "feeds": feeds, **extra}},
    }
    manager = CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), ws)
    assert "rss" in manager.collectors, manager.errors
    return CollectorRunner(manager, ws, timezone="Europe/Berlin")


def run_files(tmp_path, names, content_type="application/rss+xml"):
    with StaticHTTPServer() as server:
        for name in names:
            server.add(f"/{name}", (REAL / name).read_bytes(), content_type=content_type)
        ws = Workspace(tmp_path / "ws")
        outcome = runner_for(ws, [server.url(f"/{name}") for name in names]).run_once("rss")
        base = server.url("/")
    assert outcome.outcome == "ok", outcome.error
    by_feed = {item["feed_url"].rsplit("/", 1)[-1]: item for item in outcome.new_items}
    return ws, outcome, by_feed, base


def test_titles_are_plain_text_everywhere(tmp_path):
    names = ["amp28.xml", "entry_title_onabort.xml", "entry_title_escaped_markup.xml", "entry_title_script_inline.xml"]
    ws, outcome, items, _ = run_files(tmp_path, names)
    assert items["amp28.xml"]["title"] == "&"
    assert items["entry_title_escaped_markup.xml"]["title"] == "Example Atom"
    assert items["entry_title_script_inline.xml"]["title"] == "safe description"
    assert items["entry_title_onabort.xml"]["title"] == "(untitled)"
    stored = [ws.read_jsonl("collectors/rss/items.jsonl"), ws.read_json("collectors/rss/new.json")["items"]]
    digest = "".join(ws.read_text(rel) for rel in ws.list("collectors/rss/digest/*.md"))
    for text in [repr(stored), digest]:
        for markup in ("<b>", "&#38;", "<img", "onabort=", "<script", "<div"):
            assert markup not in text


@pytest.mark.parametrize(
    "name, field, expected",
    [
        ("eucjp.xml", "title", "ゲーム三昧な正月"),
        ("koi8r.xml", "title", "Как пережить новогоднюю ночь"),
        ("gb2312.xml", "title", "不归移民漫画系列：专业工作"),
        ("windows1255.xml", "summary", "האם תדפיס נייר של אתר אינטרנט"),
    ],
)
def test_undeclared_legacy_encodings_are_detected(tmp_path, name, field, expected):
    pytest.importorskip("chardet", reason="encoding detection needs chardet (a runtime dependency)")
    ws, outcome, items, _ = run_files(tmp_path, [name])
    assert items[name][field].startswith(expected)
    # The guess is reported, not silent.
    assert any("encoding not declared" in e for e in outcome.errors)
    assert ws.read_json("collectors/rss/feeds.json")[next(iter(ws.read_json("collectors/rss/feeds.json")))]["encoding"]


def test_relative_links_become_absolute(tmp_path):
    ws, outcome, items, base = run_files(
        tmp_path, ["http_entry_link_base_docuri.xml", "http_item_link_base_docuri.xml"]
    )
    assert items["http_entry_link_base_docuri.xml"]["link"] == base + "relative/link"
    assert items["http_item_link_base_docuri.xml"]["link"] == base + "relative/uri"


def test_xml_base_relative_to_the_document_is_resolved(tmp_path):
    atom = (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom" xml:base="/blog/">'
        "<title>B</title><id>urn:b</id><updated>2025-01-01T00:00:00Z</updated>"
        '<entry xml:base="posts/"><id>urn:b:1</id><title>One</title><updated>2025-01-01T00:00:00Z</updated>'
        '<link rel="alternate" href="one.html"/></entry></feed>'
    )
    with StaticHTTPServer() as server:
        server.add("/feeds/b.atom", atom, content_type="application/atom+xml")
        ws = Workspace(tmp_path / "ws")
        outcome = runner_for(ws, [server.url("/feeds/b.atom")]).run_once("rss")
        expected = server.url("/blog/posts/one.html")
    assert [i["link"] for i in outcome.new_items] == [expected]
    assert f"]({expected})" in "".join(ws.read_text(rel) for rel in ws.list("collectors/rss/digest/*.md"))


def test_entries_without_id_or_link_are_keyed_on_their_content_too(tmp_path):
    rss = (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Status</title>'
        "<item><title>Update</title><pubDate>Mon, 06 Jan 2025 10:00:00 GMT</pubDate><description>Mail is "
        "down.</description></item>"
        "<item><title>Update</title><pubDate>Mon, 06 Jan 2025 10:00:00 GMT</pubDate><description>Chat is "
        "down.</description></item>"
        "</channel></rss>"
    )
    with StaticHTTPServer() as server:
        server.add("/status.xml", rss, content_type="application/rss+xml")
        ws = Workspace(tmp_path / "ws")
        runner = runner_for(ws, [server.url("/status.xml")])
        first = runner.run_once("rss")
        second = runner.run_once("rss")
    assert sorted(i["summary"] for i in first.new_items) == ["Chat is down.", "Mail is down."]
    assert second.new_items == []


def test_a_slow_server_misses_its_deadline_and_the_other_feeds_are_saved(tmp_path):
    with StaticHTTPServer() as server:
        # 2,000 bytes, one every 50 ms: each read is quick, the download takes 100 s.
        server.add("/slow.xml", GOOD, content_type="application/rss+xml", drip=0.05)
        server.add("/news.xml", GOOD, content_type="application/rss+xml")
        server.add(
            "/blog.atom",
            (Path(__file__).parent / "fixtures" / "collectors" / "blog_atom.xml").read_bytes(),
            content_type="application/atom+xml",
        )
        ws = Workspace(tmp_path / "ws")
        runner = runner_for(
            ws,
            [server.url("/slow.xml"), server.url("/news.xml"), server.url("/blog.atom")],
            fetch_timeout_seconds=0.5,
            timeout_seconds=5,
        )
        outcome = runner.run_once("rss")
        slow = server.url("/slow.xml")
    assert outcome.outcome == "ok", outcome.error
    assert len(ws.read_jsonl("collectors/rss/items.jsonl")) == 3
    assert [e for e in outcome.errors if "/slow.xml" in e] == [
        f"feed {slow}: download not finished within 0.5s (fetch_timeout_seconds)"
    ]


def test_feeds_are_saved_as_they_finish_even_when_the_run_is_abandoned(tmp_path):
    with StaticHTTPServer() as server:
        server.add("/slow.xml", GOOD, content_type="application/rss+xml", drip=0.05)
        server.add("/news.xml", GOOD, content_type="application/rss+xml")
        ws = Workspace(tmp_path / "ws")
        runner = runner_for(
            ws, [server.url("/slow.xml"), server.url("/news.xml")], fetch_timeout_seconds=60, timeout_seconds=1
        )
        outcome = runner.run_once("rss")
        assert outcome.outcome == "timeout"
        assert [i["id"] for i in ws.read_jsonl("collectors/rss/items.jsonl")] == ["town-news-1", "town-news-2"]
