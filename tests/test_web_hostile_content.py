"""Hostile markup in every field the web page shows, in headless Chromium (tests/browser.py) against a real
``assistant web`` site: a note's name and text, a fact, a task, a job, a reminder, a conversation (its id, turns
and trace id), a trace (the model, the runner, the recalled memory, a skill call, the model's request), collector
output, a drafted skill, the search box and the addresses of the error pages. Each is what a mail, a feed, a page
the `web` skill read, an MCP result or a model led by any of them can put there.

Every page must show it as text: no element it carries is in the page (an id the test looks for), no script of
it runs (one would set the title), and no link of it is a ``javascript:`` one. The page's Content-Security-Policy
would stop the scripts as well; the element check sees markup the escaping let through even then."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from assistant_framework.stores import FactStore, TaskStore
from assistant_framework.traces import TraceStore, new_trace_id
from tests import browser as chromium
from tests.web_site import WEB_TOKEN, start_site

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = [
    pytest.mark.slow(reason="starts headless Chromium once for the module and walks every page"),
    pytest.mark.timeout(180),
]

if not chromium.installed():
    pytest.skip(chromium.missing(), allow_module_level=True)

#: Markup that would show if it were not escaped: an element the test finds by id, scripts that set the title, an
#: attribute break-out, a ``javascript:`` link, a Markdown link, the ends of the elements text is shown in, and
#: template syntax.
HOSTILE = (
    "\"'><b id=planted>X</b><img src=x onerror=\"document.title='RAN'\"><script>document.title='RAN'</script>"
    "</textarea></title></pre></style><svg onload=\"document.title='RAN'\"></svg>"
    "<a id=planted-link href=\"javascript:document.title='RAN'\">j</a>[link](javascript:alert(1)) {{ 7*7 }}"
)
#: A conversation's id holding markup (a file name on disk).
CHAT = 'x"><b id=planted>'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = start_site(tmp_path_factory.mktemp("web"))
    ws = site.workspace
    ws.write_text("notes/hostile.md", f"# {HOSTILE}\n\n{HOSTILE}\n")
    ws.write_text("notes/n\"'><b id=planted>.md", f"planted {HOSTILE}\n")
    ws.write_text("learnings/general.md", HOSTILE)
    FactStore(ws).add(HOSTILE, HOSTILE, HOSTILE, source="extraction", source_ref=HOSTILE, untrusted=True)
    TaskStore(ws).add(HOSTILE)
    ws.write_json(
        "jobs/jobs.json",
        [
            {
                "id": "j2",
                "name": HOSTILE,
                "cron": "0 19 * * 0",
                "message": HOSTILE,
                "created_at": "2026-11-01T00:00:00+00:00",
            }
        ],
    )
    ws.write_json(
        "reminders/reminders.json",
        [{"id": "r1", "text": HOSTILE, "due": "2026-12-30T10:00:00+00:00", "status": "pending", "chat_id": HOSTILE}],
    )
    for chat in (site.chat, CHAT):
        for role in ("user", "assistant"):
            ws.append_jsonl(
                f"conversations/{chat}/{site.day}.jsonl",
                {"time": f"{site.day}T10:00:00+00:00", "conversation": chat, "role": role, "text": HOSTILE,
                 "turn_id": HOSTILE, "trace_id": HOSTILE, "untrusted": True},
            )  # fmt: skip
    trace = new_trace_id()
    TraceStore(ws).write(
        {
            "id": trace,
            "conversation": HOSTILE,
            "time": f"{site.day}T10:00:00+00:00",
            "ok": False,
            "runner": HOSTILE,
            "model": HOSTILE,
            "rounds": 1,
            "elapsed_s": 1,
            "model_s": 1,
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            "recalled": [{"source": HOSTILE, "path": HOSTILE, "ref": HOSTILE, "snippet": HOSTILE, "score": 0.5}],
            "user_text": HOSTILE,
            "reply": HOSTILE,
            "section_sizes": {HOSTILE: {"chars": 10, "tokens": 3}},
            "skill_calls": [{"skill": HOSTILE, "args": {HOSTILE: HOSTILE}, "result": HOSTILE, "error": HOSTILE}],
            "error": HOSTILE,
            "requests": [
                {"round": 1, "model": HOSTILE, "runner": HOSTILE, "messages": [{"role": "user", "content": HOSTILE}]}
            ],
        }
    )
    ws.write_text("collectors/writer/latest.md", HOSTILE)
    ws.write_text("skills-drafts/hostile/SKILL.md", f"---\nname: hostile\ndescription: {HOSTILE!r}\n---\n{HOSTILE}\n")
    site.trace = trace  # type: ignore[attr-defined]
    yield site
    site.close()


@pytest.fixture(scope="module")
def browser(site):
    with chromium.chromium("1100,900", implicit_wait=0) as driver:
        driver.get(f"{site.base}/memory?token={WEB_TOKEN}")
        yield driver


def pages(site) -> list[str]:
    q = quote(HOSTILE)
    return [
        "/memory?q=planted",
        f"/memory?q={q}&source={q}",
        *(f"/memory/{category}" for category in ("notes", "facts", "tasks", "learnings")),
        "/file?path=notes/hostile.md",
        "/file?path=notes/hostile.md&edit=1",
        f"/file?path={quote(chr(34))}",
        "/file?path=facts/facts.json",
        "/file?path=tasks/tasks.json",
        "/file?path=collectors/writer/latest.md",
        f"/file?path={q}",
        "/conversations",
        f"/conversations/{site.chat}/{site.day}",
        f"/conversations/{quote(CHAT)}/{site.day}",
        "/traces",
        f"/traces/{site.trace}",
        f"/collectors?ran={q}&outcome={q}",
        "/jobs",
        "/reminders",
        "/usage",
        "/skills",
        "/skills/drafts",
        f"/no-such-page{q}",
    ]


def test_hostile_markup_is_text_on_every_page(browser, site):
    shown = 0
    for path in pages(site):
        browser.get(site.base + path)
        assert browser.find_elements(By.TAG_NAME, "h1"), path  # the page itself is there
        assert not browser.find_elements(By.ID, "planted"), f"markup from the content is an element on {path}"
        assert not browser.find_elements(By.ID, "planted-link"), path
        assert "RAN" not in browser.title, f"a script of the content ran on {path}"
        links = [a.get_attribute("href") or "" for a in browser.find_elements(By.TAG_NAME, "a")]
        assert not [href for href in links if not href.startswith(site.base)], path  # nothing leads off the page
        shown += "<b id=planted>" in browser.find_element(By.TAG_NAME, "body").text
    assert shown >= 15, "the markup is shown as text (the walk saw the content)"
