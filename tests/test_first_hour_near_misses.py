"""Near misses of the first hour (issue 33.10): the terminal's /now without raw Markdown, one RSS item found
once by memory search, the web page's reminders view, Ctrl-C during prompt evaluation."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

from assistant_framework.stores.reminders import ReminderStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.cli.main import main
from tests.console_harness import run_bot, write_config
from tests.fakes.feed_server import StaticHTTPServer
from tests.web_site import WEB_TOKEN, start_site

REPO = Path(__file__).resolve().parents[1]
FEEDS = REPO / "tests" / "fixtures" / "collectors"


def test_now_in_the_terminal_is_text_not_markdown_source(tmp_path: Path) -> None:
    (tmp_path / "skills").mkdir()
    config = write_config(tmp_path / "config", "http://127.0.0.1:9/v1", tmp_path / "skills")
    ws = Workspace(tmp_path / "ws")
    soon = datetime.now(timezone.utc).replace(second=0, microsecond=0) + timedelta(minutes=5)
    if soon.date() != datetime.now(timezone.utc).date():  # just before midnight: today's reminder is earlier
        soon -= timedelta(minutes=10)
    ReminderStore(ws).add("console", "call *mum* about [the trip](https://example.com/trip)", soon, "UTC")
    result = run_bot(["--frontend", "console", "--config", str(config), "--workspace", str(ws.root)], "/now\n")
    assert result.returncode == 0, result.stderr
    shown = result.stdout
    assert "Now —" in shown and "Reminders today" in shown, shown
    assert "**" not in shown and "\\" not in shown, shown  # no Markdown source, no escaping backslashes
    assert "call *mum* about [the trip](https://example.com/trip)" in shown  # the reminder as typed


def test_memory_search_finds_one_rss_item_once(tmp_path: Path, capsys) -> None:
    """It was found three times: in items.jsonl, in the runner's new.json copy and in the day's digest."""
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config, ignore=shutil.ignore_patterns("local"))
    ws = Workspace(tmp_path / "ws")
    opts = ["--config", str(config), "--workspace", str(ws.root)]
    with StaticHTTPServer() as feeds:
        feeds.add("/news.xml", (FEEDS / "news_rss2.xml").read_bytes(), content_type="application/rss+xml")
        (config / "collectors" / "rss.json").write_text(
            json.dumps({"enabled": True, "feeds": [feeds.url("/news.xml")]})
        )
        assert main(["collectors", "run", "rss", *opts]) == 0
    capsys.readouterr()
    assert main(["memory", "search", "bridge reopens", "--json", *opts]) == 0
    hits = [h for h in json.loads(capsys.readouterr().out) if "Bridge reopens" in h["snippet"]]
    assert [h["path"] for h in hits] == ["collectors/rss/items.jsonl"], hits
    assert ws.list("collectors/rss/digest/*.md")  # the digest is still written, for reading
    # Another item of the same run: once too (the rule is not about one title).
    assert main(["memory", "search", "library opening hours", "--json", *opts]) == 0
    hits = [h for h in json.loads(capsys.readouterr().out) if "Library extends" in h["snippet"]]
    assert len(hits) == 1, hits


def test_the_web_page_shows_the_reminders(tmp_path: Path) -> None:
    import requests

    site = start_site(tmp_path)
    try:
        store = ReminderStore(site.workspace)
        now = datetime.now(timezone.utc)
        store.add(12345, "water the <b>plants</b>", now + timedelta(days=1), "UTC")
        store.add("console", "from a mail", now + timedelta(days=2), "UTC", untrusted=True)
        done = store.add(12345, "stretch", now - timedelta(hours=1), "UTC")
        store.mark_delivered(done["id"], now)
        signed = {"Authorization": f"Bearer {WEB_TOKEN}"}
        data = requests.get(f"{site.base}/api/reminders", headers=signed, timeout=30).json()
        assert [r["text"] for r in data["pending"]] == ["water the <b>plants</b>", "from a mail"]
        assert [r["outside"] for r in data["pending"]] == [False, True]
        assert [(r["text"], r["status"]) for r in data["past"]] == [("stretch", "delivered")]
        page = requests.get(f"{site.base}/reminders", headers=signed, timeout=30)
        assert page.status_code == 200
        assert "water the &lt;b&gt;plants&lt;/b&gt;" in page.text and "<b>plants" not in page.text
        assert "from outside content" in page.text and "stretch" in page.text
        assert 'href="/reminders"' in requests.get(f"{site.base}/memory", headers=signed, timeout=30).text
        assert requests.get(f"{site.base}/api/reminders", timeout=30).status_code == 401  # signed in only
    finally:
        site.close()


def test_ctrl_c_while_the_model_reads_the_prompt_gives_the_prompt_back_at_once(tmp_path: Path, chat_server) -> None:
    import sys

    from tests.console_harness import Terminal

    (tmp_path / "skills").mkdir()
    config = write_config(tmp_path / "config", chat_server.base_url, tmp_path / "skills")
    llm = json.loads((config / "llm.json").read_text())
    (config / "llm.json").write_text(json.dumps({**llm, "stream": True}))  # as the shipped config/llm.json
    chat_server.enqueue({"content": '{"reply": "too late"}', "delay": 20}, '{"reply": "here again"}')
    ws = Workspace(tmp_path / "ws")
    argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
    term = Terminal([*argv, "--workspace", str(ws.root)])
    try:
        term.wait_for("you> ")
        term.type("a long question\r")
        assert chat_server.wait_for_requests(1, timeout=30, path="/chat/completions")
        term.type("\x03")  # Ctrl-C while no token has come yet
        term.wait_for("⏹ Stopped.", timeout=8)  # not after the server's 20 s
        mark = term.output.index("⏹ Stopped.")
        term.wait_for("you> ", start=mark)
        term.type("still there?\r")
        term.wait_for("here again", start=mark)
        term.wait_for("you> ", start=term.output.index("here again", mark))
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert "too late" not in term.output
