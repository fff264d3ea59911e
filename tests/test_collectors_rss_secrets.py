"""A feed URL's secrets (a token in its query, a password before the host) are used to fetch and never
written: through the real CLI (`assistant collectors run rss`, then `assistant backup`), no file of the
workspace, no line of the command's output or log and no byte of the backup archive holds them, also when
the feed fails. A cursor an older version keyed by the whole URL is taken over and its key dropped."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from assistant_framework.redaction import url_key, url_without_secrets
from assistant_framework.workspace import Workspace
from tests.cli_inprocess import CliRun, run_cli
from tests.fakes.feed_server import StaticHTTPServer

FIXTURES = Path(__file__).parent / "fixtures" / "collectors"
TOKEN = "feedtoken-5f3a9c2e7b1d"
PASSWORD = "hunter2-feed-password"
KEY = "k3y-0f-the-blog-feed"


@pytest.fixture
def server():
    with StaticHTTPServer() as srv:
        srv.add("/news.xml", (FIXTURES / "news_rss2.xml").read_bytes(), content_type="application/rss+xml", etag='"n1"')
        srv.add("/blog.atom", (FIXTURES / "blog_atom.xml").read_bytes(), content_type="application/atom+xml")
        yield srv


def assistant(*args: str) -> CliRun:
    """The command in this process (tests/cli_inprocess.py): its output and its log, captured as a user sees them."""
    return run_cli(*args)


def test_feed_url_secrets_stay_out_of_the_workspace_the_output_and_the_backup(tmp_path, server):
    news = server.url(f"/news.xml?token={TOKEN}")
    blog = server.url(f"/blog.atom?key={KEY}&lang=en").replace("://", f"://reader:{PASSWORD}@")
    missing = server.url(f"/gone.xml?access_token={TOKEN}")
    config = tmp_path / "config"
    (config / "collectors").mkdir(parents=True)
    (config / "runtime.json").write_text(json.dumps({"timezone": "UTC", "log_level": "DEBUG"}))
    (config / "collectors" / "rss.json").write_text(json.dumps({"enabled": True, "feeds": [news, blog, missing]}))
    ws = Workspace(tmp_path / "ws")

    run = assistant("collectors", "run", "rss", "--config", str(config), "--workspace", str(ws.root))
    assert run.returncode in (0, 1), run.stderr
    assert server.requests_to("/news.xml")[0].status == 200  # fetched with its token
    items = ws.read_jsonl("collectors/rss/items.jsonl")
    assert len(items) == 3 and {i["feed_url"] for i in items} == {url_without_secrets(news), url_without_secrets(blog)}
    assert "HTTP 404" in run.stdout + run.stderr and "gone.xml?access_token=***" in run.stdout + run.stderr

    backup = assistant("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz"))
    assert backup.returncode == 0, backup.stderr
    archive = gzip.decompress((tmp_path / "b.tar.gz").read_bytes()).decode("latin-1")
    stored = "\n".join(p.read_text("latin-1") for p in ws.root.rglob("*") if p.is_file())
    for secret in (TOKEN, PASSWORD, KEY):
        assert secret not in stored and secret not in archive, secret
        assert secret not in run.stdout + run.stderr + backup.stdout + backup.stderr, secret

    # Two runs later the cursor is still the one feed's: its ETag is sent (a 304), nothing new.
    again = assistant("collectors", "run", "rss", "--config", str(config), "--workspace", str(ws.root))
    assert again.returncode in (0, 1), again.stderr
    assert server.requests_to("/news.xml")[-1].status == 304


def test_a_feed_url_with_a_token_in_its_path_leaves_no_trace_of_it(tmp_path):
    """Private podcast feeds carry their token in the path (``/feed/<token>.rss``, ``/rss/<token>``), where no
    query rule finds it: the URL was kept whole in the items, the feeds' status, the cursor's keys, the memory
    index, the runs and every backup. Through the real CLI: fetched with the token, stored and shown without."""
    podcast, members = "Zp4Qm8Rt2Wx6Yv9Bn3Kd", "Lk7Hs2Dq9Fz4Jc6Vb1Nm"
    with StaticHTTPServer() as srv:
        srv.add(f"/feed/{podcast}.rss", (FIXTURES / "news_rss2.xml").read_bytes(), content_type="application/rss+xml")
        srv.add(f"/rss/{members}", (FIXTURES / "blog_atom.xml").read_bytes(), content_type="application/atom+xml")
        feeds = [srv.url(f"/feed/{podcast}.rss"), srv.url(f"/rss/{members}"), srv.url(f"/rss/{members}x")]
        config = tmp_path / "config"
        (config / "collectors").mkdir(parents=True)
        (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
        (config / "collectors" / "rss.json").write_text(json.dumps({"enabled": True, "feeds": feeds}))
        ws = Workspace(tmp_path / "ws")
        run = assistant("collectors", "run", "rss", "--config", str(config), "--workspace", str(ws.root))
        assert srv.requests_to(f"/feed/{podcast}.rss")[0].status == 200  # fetched with its token
        search = assistant("memory", "search", "bridge", "--workspace", str(ws.root), "--json")
        host = srv.url("/").rstrip("/")
    said = run.stdout + run.stderr
    assert run.returncode == 0 and "HTTP 404" in said and f"{host}/rss/***" in said, said  # the one that failed
    assert search.returncode == 0 and "Bridge" in search.stdout, search.stdout + search.stderr
    assert {i["feed_url"] for i in ws.read_jsonl("collectors/rss/items.jsonl")} == {
        f"{host}/feed/***",
        f"{host}/rss/***",
    }
    backup = assistant("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz"))
    assert backup.returncode == 0, backup.stderr
    archive = gzip.decompress((tmp_path / "b.tar.gz").read_bytes()).decode("latin-1")
    stored = "\n".join(p.as_posix() + "\n" + p.read_text("latin-1") for p in ws.root.rglob("*") if p.is_file())
    assert (ws.root / "memory" / "index.sqlite3").is_file()
    for secret in (podcast, members):
        assert secret not in stored and secret not in archive and secret not in said + search.stdout, secret


def test_what_an_older_version_wrote_with_a_path_token_is_rewritten_without_it(tmp_path):
    """An older version wrote a path-token feed's URL whole into its cursor, feeds.json, items, runs and digests: at
    the first run that takes the older cursor or status over, the URL in them is rewritten as shown, nothing else
    changes (the item is still there, found by memory search), and no file or backup holds the token any more."""
    podcast, gone_token = "Zp4Qm8Rt2Wx6Yv9Bn3Kd", "Qw3Er5Ty7Ui9Op2As4Df"
    with StaticHTTPServer() as srv:
        srv.add(f"/feed/{podcast}.rss", (FIXTURES / "news_rss2.xml").read_bytes(), content_type="application/rss+xml")
        feed, gone = srv.url(f"/feed/{podcast}.rss"), srv.url(f"/rss/{gone_token}")
        host = srv.url("/").rstrip("/")
        ws = Workspace(tmp_path / "ws")
        # As the older version left them: the feed fetched once, the other one failing.
        ws.write_json("state/collectors/rss.json", {"cursor": {"feeds": {feed: {"seen": ["town-news-1"]}}}})
        ws.write_json(
            "collectors/rss/feeds.json", {feed: {"name": feed}, gone: {"last_error": f"feed {gone}: HTTP 404"}}
        )
        ws.append_jsonl(
            "collectors/rss/items.jsonl", {"id": "town-news-1", "feed": feed, "feed_url": feed, "title": "x"}
        )
        ws.append_jsonl("collectors/rss/runs.jsonl", {"sources": {feed: {"ok": True}, gone: {"error": f"feed {gone}"}}})
        ws.write_text("collectors/rss/digest/2025-01-06.md", f"# Feeds digest 2025-01-06\n\n### {feed}\n- x\n")
        config = tmp_path / "config"
        (config / "collectors").mkdir(parents=True)
        (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
        (config / "collectors" / "rss.json").write_text(json.dumps({"enabled": True, "feeds": [feed, gone]}))
        run = assistant("collectors", "run", "rss", "--config", str(config), "--workspace", str(ws.root))
    assert run.returncode == 0, run.stdout + run.stderr
    items = ws.read_jsonl("collectors/rss/items.jsonl")
    assert items[0] == {"id": "town-news-1", "feed": f"{host}/feed/***", "feed_url": f"{host}/feed/***", "title": "x"}
    assert [i["id"] for i in items] == ["town-news-1", "town-news-2"]  # the one seen before is not taken again
    assert f"### {host}/feed/***" in ws.read_text("collectors/rss/digest/2025-01-06.md")
    backup = assistant("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz"))
    assert backup.returncode == 0, backup.stderr
    archive = gzip.decompress((tmp_path / "b.tar.gz").read_bytes()).decode("latin-1")
    stored = "\n".join(p.as_posix() + "\n" + p.read_text("latin-1") for p in ws.root.rglob("*") if p.is_file())
    for secret in (podcast, gone_token):
        assert secret not in stored and secret not in archive and secret not in run.stdout + run.stderr, secret


#: A private feed that copies its token into its entries: links, an id, a link in a summary; one entry's link
#: has a password and a signature of its own, one an article's slug (a token by its looks) and harmless parameters.
PRIVATE_FEED = """<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Members podcast</title><link>https://members.example/</link>
<description>For members</description>
<item><title>Episode one</title><link>https://cdn.example/ep1.mp3?token={token}&amp;t=30</link>
<guid>https://cdn.example/ep1.mp3?token={token}</guid>
<description>&lt;p&gt;Listen &lt;a href="https://cdn.example/ep1.mp3?token={token}"&gt;here&lt;/a&gt;.&lt;/p&gt;</description></item>
<item><title>Episode two</title><link>https://listener:{password}@members.example/ep2?sig={sig}&amp;expires=1767225600</link>
<guid isPermaLink="false">ep-2</guid></item>
<item><title>Episode three</title><link>https://members.example/feed/{path}/ep3.mp3</link>
<guid isPermaLink="false">ep-3</guid></item>
<item><title>How to use Python 3.12</title><link>https://blog.example/posts/how-to-use-python-3-12?utm_source=rss&amp;page=2</link>
<guid isPermaLink="false">post-4</guid></item>
</channel></rss>
"""


def _private_feed(srv: StaticHTTPServer, tmp_path: Path, path_token: str, sig: str) -> Path:
    """The private feed served at ``/feed/<path_token>.rss`` and configured with ``?token=TOKEN``; its config."""
    body = PRIVATE_FEED.format(token=TOKEN, password=PASSWORD, sig=sig, path=path_token)
    srv.add(f"/feed/{path_token}.rss", body, content_type="application/rss+xml")
    config = tmp_path / "config"
    (config / "collectors").mkdir(parents=True)
    (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    feeds = [srv.url(f"/feed/{path_token}.rss?token={TOKEN}")]
    (config / "collectors" / "rss.json").write_text(json.dumps({"enabled": True, "feeds": feeds}))
    return config


def test_an_entrys_link_keeps_no_secret_and_stays_usable(tmp_path):
    """A private feed's entries carry its token (in their links, an id, a link in a summary) and secrets of their
    own (``user:password@``, ``?sig=``): kept whole, they went into items.jsonl, the digest, the memory index (the
    model's recall), the output and every backup. Through the real CLI over a real socket: each link is stored
    without them and still followed (the other parameters as they were), a slug that looks like a token stays."""
    path_token, sig = "Yt6Pk2Mw8Qz4Rn7Vb3Lc", "c2lnbmF0dXJlLW9mLWVwMg"
    with StaticHTTPServer() as srv:
        config = _private_feed(srv, tmp_path, path_token, sig)
        ws = Workspace(tmp_path / "ws")
        run = assistant("collectors", "run", "rss", "--config", str(config), "--workspace", str(ws.root))
        assert srv.requests_to(f"/feed/{path_token}.rss")[0].status == 200  # fetched with its secrets
        search = assistant("memory", "search", "Episode", "--workspace", str(ws.root), "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    items = ws.read_jsonl("collectors/rss/items.jsonl")
    assert [i["link"] for i in items] == [
        "https://cdn.example/ep1.mp3?t=30",
        "https://members.example/ep2?expires=1767225600",
        "https://members.example/feed/***/ep3.mp3",
        "https://blog.example/posts/how-to-use-python-3-12?utm_source=rss&page=2",
    ]
    assert items[0]["id"] == "https://cdn.example/ep1.mp3" and "<https://cdn.example/ep1.mp3>" in items[0]["summary"]
    assert search.returncode == 0 and "Episode two" in search.stdout, search.stdout + search.stderr
    backup = assistant("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz"))
    assert backup.returncode == 0, backup.stderr
    archive = gzip.decompress((tmp_path / "b.tar.gz").read_bytes()).decode("latin-1")
    stored = "\n".join(p.as_posix() + "\n" + p.read_text("latin-1") for p in ws.root.rglob("*") if p.is_file())
    said = run.stdout + run.stderr + search.stdout + search.stderr
    for secret in (TOKEN, PASSWORD, path_token, sig):
        assert secret not in stored and secret not in archive and secret not in said, secret


def test_what_an_older_version_kept_of_an_entrys_link_is_rewritten_without_its_secrets(tmp_path):
    """An older version kept an entry's link and id whole: in its cursor's seen ids, items.jsonl (link, id, a link
    in the summary) and the digest. The first run rewrites each link as it is kept now (the feed's own URL as
    shown stays as it was), the entry seen with its token is not taken again, and no file holds a secret."""
    path_token, sig = "Yt6Pk2Mw8Qz4Rn7Vb3Lc", "c2lnbmF0dXJlLW9mLWVwMg"
    with StaticHTTPServer() as srv:
        config = _private_feed(srv, tmp_path, path_token, sig)
        feed = srv.url(f"/feed/{path_token}.rss?token={TOKEN}")
        ws = Workspace(tmp_path / "ws")
        ep1 = f"https://cdn.example/ep1.mp3?token={TOKEN}"
        ws.write_json("state/collectors/rss.json", {"cursor": {"feeds": {url_key(feed): {"seen": [ep1, "ep-2"]}}}})
        shown = url_without_secrets(feed)
        older = {"id": ep1, "feed": "Members podcast", "feed_url": shown, "title": "Episode one"}
        ws.append_jsonl(
            "collectors/rss/items.jsonl", {**older, "link": f"{ep1}&t=30", "summary": f"Listen here <{ep1}>."}
        )
        ep2 = f"https://listener:{PASSWORD}@members.example/ep2?sig={sig}&expires=1767225600"
        ws.write_text(
            "collectors/rss/digest/2025-01-06.md",
            f"# Feeds digest 2025-01-06\n\n### Members podcast\n- [Episode one]({ep1}&t=30)\n- [Episode two]({ep2})\n",
        )
        run = assistant("collectors", "run", "rss", "--config", str(config), "--workspace", str(ws.root))
    assert run.returncode == 0, run.stdout + run.stderr
    items = ws.read_jsonl("collectors/rss/items.jsonl")
    assert items[0] == {
        **older,
        "id": "https://cdn.example/ep1.mp3",
        "link": "https://cdn.example/ep1.mp3?t=30",
        "summary": "Listen here <https://cdn.example/ep1.mp3>.",
    }
    assert [i["id"] for i in items[1:]] == ["ep-3", "post-4"]  # the ones seen before are not taken again
    digest = ws.read_text("collectors/rss/digest/2025-01-06.md")
    assert "- [Episode one](https://cdn.example/ep1.mp3?t=30)\n" in digest
    assert "- [Episode two](https://members.example/ep2?expires=1767225600)\n" in digest
    stored = "\n".join(p.as_posix() + "\n" + p.read_text("latin-1") for p in ws.root.rglob("*") if p.is_file())
    for secret in (TOKEN, PASSWORD, path_token, sig):
        assert secret not in stored and secret not in run.stdout + run.stderr, secret


def test_a_cursor_keyed_by_the_whole_url_is_taken_over_and_dropped(tmp_path, server):
    news = server.url(f"/news.xml?token={TOKEN}")
    ws = Workspace(tmp_path / "ws")
    # As an older version wrote it: the whole URL as the key, the feed's ETag and what was seen.
    ws.write_json("state/collectors/rss.json", {"cursor": {"feeds": {news: {"etag": '"n1"', "seen": ["town-news-1"]}}}})
    config = tmp_path / "config"
    (config / "collectors").mkdir(parents=True)
    (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    (config / "collectors" / "rss.json").write_text(json.dumps({"enabled": True, "feeds": [news]}))
    run = assistant("collectors", "run", "rss", "--config", str(config), "--workspace", str(ws.root))
    assert run.returncode == 0, run.stderr
    assert server.requests_to("/news.xml")[-1].headers.get("If-None-Match") == '"n1"'  # the old cursor was used
    feeds = ws.read_json("state/collectors/rss.json")["cursor"]["feeds"]
    assert list(feeds) == [url_key(news)] and TOKEN not in ws.read_text("state/collectors/rss.json")


def test_a_secret_calendar_urls_token_and_password_stay_out_of_its_errors(tmp_path):
    """A calendar URL carries its secret in the path (Google's private-<hex>), the query or the user:password;
    a failing fetch is reported by host and file name only, through the real CLI."""
    with StaticHTTPServer() as gone:
        port = gone.url("/").split(":")[2].split("/")[0]
    url = f"http://reader:{PASSWORD}@127.0.0.1:{port}/calendar/ical/private-{TOKEN}/basic.ics?key={KEY}"
    config = tmp_path / "config"
    (config / "collectors").mkdir(parents=True)
    (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
    (config / "collectors" / "calendar.json").write_text(
        json.dumps({"enabled": True, "sources": [{"url": url, "name": "work"}]})
    )
    ws = Workspace(tmp_path / "ws")
    run = assistant("collectors", "run", "calendar", "--config", str(config), "--workspace", str(ws.root))
    assert run.returncode == 1, run.stdout + run.stderr  # nothing listens there: the run failed
    said = run.stdout + run.stderr
    assert f"work (http://127.0.0.1:{port}/…/basic.ics)" in said, said
    stored = "\n".join(p.read_text("latin-1") for p in ws.root.rglob("*") if p.is_file())
    for secret in (TOKEN, PASSWORD, KEY):
        assert secret not in said and secret not in stored, secret


def test_a_calendar_url_that_ends_in_its_token_names_nothing_by_it(tmp_path):
    """iCloud's and Nextcloud's shared calendars end in their secret (``/published/2/<token>``,
    ``/public-calendars/<token>?export``). Given without a name, the source was named by that last segment: the
    token was in the files of six places of the workspace (events, upcoming.md, the source's file name, the
    collector's state, its runs, the memory index), in the command's output and in every backup."""
    icloud_token = "MTIzNDU2Nzg5MDEyMzQ1Nj7aQxYz9kLmP"
    nextcloud_token = "aB3dE5fG7hJ9kL2m"
    with StaticHTTPServer() as srv:
        srv.add(f"/published/2/{icloud_token}", (FIXTURES / "work.ics").read_bytes(), content_type="text/calendar")
        srv.add(f"/dav/public-calendars/{nextcloud_token}", (FIXTURES / "family.ics").read_bytes())
        gone = srv.url(f"/published/2/{icloud_token}x")
        config = tmp_path / "config"
        (config / "collectors").mkdir(parents=True)
        (config / "runtime.json").write_text(json.dumps({"timezone": "UTC"}))
        sources = [
            srv.url(f"/published/2/{icloud_token}"),
            srv.url(f"/dav/public-calendars/{nextcloud_token}?export"),
            gone,
        ]
        (config / "collectors" / "calendar.json").write_text(json.dumps({"enabled": True, "sources": sources}))
        ws = Workspace(tmp_path / "ws")
        # What an older version kept the iCloud source's events in: the token in the file's name.
        older = f"collectors/calendar/sources/{icloud_token}-{hashlib.sha256(sources[0].encode()).hexdigest()[:8]}.json"
        ws.write_json(older, {"name": older, "events": []})
        run = assistant("collectors", "run", "calendar", "--config", str(config), "--workspace", str(ws.root))
        host = srv.url("/").rstrip("/")
    said = run.stdout + run.stderr
    assert "HTTP 404" in said and ws.read_json("collectors/calendar/events.json"), said  # fetched, one failed
    backup = assistant("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz"))
    assert backup.returncode == 0, backup.stderr
    archive = gzip.decompress((tmp_path / "b.tar.gz").read_bytes()).decode("latin-1")
    stored = "\n".join(p.as_posix() + "\n" + p.read_text("latin-1") for p in ws.root.rglob("*") if p.is_file())
    for secret in (icloud_token, nextcloud_token):
        assert secret not in stored and secret not in archive and secret not in said, secret
    assert f"({host}/…)" in said, said  # the failing one named by its host
