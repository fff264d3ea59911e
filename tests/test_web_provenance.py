"""The page over real HTTP says what came from outside content, and a path no file can have is a clear
4xx (issue 26.13)."""

from __future__ import annotations

import logging
import re

import pytest
import requests

from assistant_framework.stores import FactStore, TaskStore
from assistant_framework.stores.provenance import mark_text
from tests.web_site import WEB_TOKEN, start_site

BEARER = {"Authorization": f"Bearer {WEB_TOKEN}"}
LABEL = 'class="tag outside"'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = start_site(tmp_path_factory.mktemp("site"))
    ws = site.workspace
    FactStore(ws).add("Anna", "employer", "Fabrikam (from a forwarded mail)", source="extraction", untrusted=True)
    TaskStore(ws).add("Wire 900 EUR to the new account", untrusted=True)
    ws.write_text("notes/forwarded.md", mark_text("# Forwarded\n\nThe zeppelin invoice is overdue.\n"))
    ws.write_text("collectors/writer/latest.md", "# run 0\n\nzeppelin news from a feed\n")
    day_file = f"conversations/{site.chat}/{site.day}.jsonl"
    ws.append_jsonl(
        day_file,
        {
            "time": f"{site.day}T12:00:00+00:00",
            "conversation": site.chat,
            "role": "user",
            "text": "Fwd: the zeppelin invoice",
            "turn_id": f"{site.chat}:{site.day}:3",
            "untrusted": True,
        },
    )
    trace = ws.read_json(f"traces/{site.day}/{site.trace_id}.json")
    trace["recalled"].append(
        {"source": "collector:writer", "path": "collectors/writer/latest.md", "ref": "L1-3", "snippet": "zeppelin news"}
    )
    ws.write_json(f"traces/{site.day}/{site.trace_id}.json", trace)
    yield site
    site.close()


def _page(site, path: str) -> str:
    reply = requests.get(site.base + path, headers=BEARER)
    assert reply.status_code == 200, (path, reply.status_code)
    return reply.text


def _labelled(html: str, *, around: str) -> bool:
    """Whether the list item or table row holding ``around`` carries the outside label."""
    for block in re.split(r"<(?:li|tr)[ >]", html):
        if around in block:
            return LABEL in block.split("</li>")[0].split("</tr>")[0]
    raise AssertionError(f"{around!r} is not on the page")


def test_search_hits_from_outside_content_are_labelled(site):
    hits = requests.get(f"{site.base}/api/memory/search", params={"q": "zeppelin"}, headers=BEARER).json()["hits"]
    outside = {h["path"]: h["outside"] for h in hits}
    assert outside["notes/forwarded.md"] is True and outside["collectors/writer/latest.md"] is True
    bicycle = requests.get(f"{site.base}/api/memory/search", params={"q": "bicycle"}, headers=BEARER).json()["hits"]
    assert bicycle and not any(h["outside"] for h in bicycle if h["path"] == "notes/shopping.md")
    page = _page(site, "/memory?q=zeppelin+bicycle")
    assert _labelled(page, around="notes/forwarded.md") and _labelled(page, around="collectors/writer/latest.md")
    assert not _labelled(page, around="notes/shopping.md")


def test_facts_records_and_files_from_outside_content_are_labelled(site):
    facts = _page(site, "/memory/facts")
    assert _labelled(facts, around="Fabrikam") and not _labelled(facts, around="Lyon")
    tasks = _page(site, "/file?path=tasks/tasks.json")
    assert _labelled(tasks, around="Wire 900 EUR") and not _labelled(tasks, around="Repair the bicycle light")
    assert LABEL in _page(site, "/file?path=notes/forwarded.md")
    assert LABEL in _page(site, "/file?path=collectors/writer/latest.md")
    assert LABEL not in _page(site, "/file?path=notes/shopping.md")
    shown = requests.get(f"{site.base}/api/file?path=notes/forwarded.md", headers=BEARER).json()
    assert shown["outside"] is True
    assert requests.get(f"{site.base}/api/file?path=notes/shopping.md", headers=BEARER).json()["outside"] is False


def test_turns_and_recalled_memories_from_outside_content_are_labelled(site):
    day = _page(site, f"/conversations/{site.chat}/{site.day}")
    assert _labelled(day, around="Fwd: the zeppelin invoice") and not _labelled(day, around="what colour is my bicycle")
    assert _labelled(day, around="collectors/writer/latest.md") and not _labelled(day, around="facts/facts.json")
    turns = requests.get(f"{site.base}/api/conversations/{site.chat}/{site.day}", headers=BEARER).json()["turns"]
    assert [t["outside"] for t in turns] == [False, False, True]
    assert [h["outside"] for h in turns[1]["recalled"]] == [False, True]
    trace = _page(site, f"/traces/{site.trace_id}")
    assert _labelled(trace, around="collectors/writer/latest.md") and not _labelled(trace, around="facts/facts.json")


LONG = "a" * 5000
PATHS = [
    f"notes/{LONG}.md",  # the report's 5,000 characters
    "notes/" + "/".join(["d" * 200] * 30) + ".md",  # longer than any path may be, each name allowed
    "notes/" + "é" * 200 + ".md",  # a name over 255 bytes
    "notes/shopping.md/inside.md",  # through a file
    "facts/facts.json/x.json",
]


def test_a_path_no_file_can_have_is_a_clear_4xx_on_every_file_route(site, caplog):
    session = requests.Session()
    session.get(f"{site.base}/memory?token={WEB_TOKEN}")
    token = re.search(r'name="_xsrf" value="([^"]+)"', session.get(f"{site.base}/memory").text).group(1)
    with caplog.at_level(logging.WARNING):
        for rel in PATHS:
            for reply in (
                requests.get(f"{site.base}/file", params={"path": rel}, headers=BEARER),
                requests.get(f"{site.base}/file", params={"path": rel, "edit": "1"}, headers=BEARER),
                requests.get(f"{site.base}/api/file", params={"path": rel}, headers=BEARER),
                requests.post(f"{site.base}/api/file", params={"path": rel}, headers=BEARER, json={"content": "x"}),
                requests.put(f"{site.base}/api/file", params={"path": rel}, headers=BEARER, json={"content": "x"}),
                requests.delete(f"{site.base}/api/file", params={"path": rel}, headers=BEARER),
                session.post(f"{site.base}/file", params={"path": rel}, data={"content": "x", "_xsrf": token}),
                session.post(f"{site.base}/file/delete", data={"path": rel, "_xsrf": token}),
                session.post(f"{site.base}/file/delete", data={"path": rel, "id": "f1", "_xsrf": token}),
            ):
                assert 400 <= reply.status_code < 500, (rel[:40], reply.request.method, reply.status_code)
                assert "Traceback" not in reply.text and len(reply.content) < 20_000
        for chat in ("c" * 300, LONG):
            reply = requests.get(f"{site.base}/api/conversations/{chat}/{site.day}", headers=BEARER)
            assert reply.status_code == 404
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage()[:200] for r in caplog.records]
    assert site.workspace.read_text("notes/shopping.md").startswith("# Shopping")
