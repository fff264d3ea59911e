"""Lists of 20,000 entries on the web page (chats: 2,000; jobs: 1,000, with ``jobs.max_jobs`` raised; skills,
collectors and drafts: 450), over real HTTP against a real ``assistant web`` site: a memory folder's files, the
facts, the chats, the jobs, the pending reminders, the skills (and those that failed to load), the installed
skills, the drafted skills and the collectors are each shown ``window.ENTRIES`` at a time, with the line that
says which and leads to the next page (assistant_framework/web/window.py). The JSON twins send everything, as
before.

Before, each page listed all of them: 20,000 notes made a 2 MB page, as many facts 9 MB, chats 3.4 MB, pending
reminders 3.6 MB, 1,000 jobs 1 MB; 450 plugin skills (each with its argument schema) and 450 that failed to load
made a 385 kB page, 450 drafts 285 kB, 450 collectors 227 kB, and they grow with the number. The pairing codes
waiting are not paged: there are at most 50 (conversation/pairing.py). "Run now" on a later page of collectors
comes back to that page."""

from __future__ import annotations

import json
import re
from html import unescape

import httpx
import pytest

from assistant_framework.web import window
from tests.fixtures.collectors.helpers import write_collector
from tests.web_site import WEB_TOKEN, start_site

pytestmark = pytest.mark.slow(reason="writes 20,000 notes, chats, facts, jobs and reminders into a workspace")

N = 20_000
#: Jobs are bounded by ``jobs.max_jobs`` (50 by default); an owner who raises it gets pages of them too.
JOBS = 1_000
#: Chats: 2,000 (listing each one's days takes 1 ms a chat, the same whatever the page shows).
CHATS = 2_000
#: Skills (plugins, and SKILL.md skills in ``.agents/skills/``: 500 are read at most), collectors, drafts (the
#: assistant writes 20 at most; these are put there by hand) and plugins that fail to load.
SKILLS = 450
#: A page of ENTRIES entries stays small, whatever the list's length (200 jobs with their forms: 210 KB).
PAGE_BYTES = 250_000

PLUGIN_SKILL = """DESCRIPTION = "Echoes (a skill put here by hand)."
ARGS_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

def run(workspace, args):
    return args
"""
COLLECTOR = """
DESCRIPTION = "A feed (test collector)."
FILE_STRUCTURE = "nothing"
GENERATED_FILES = []
INTERVAL_SECONDS = 3600
def run(workspace, config):
    return {"new_items": [], "summary": "nothing new"}
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("web")
    (folder / "config").mkdir()
    (folder / "config" / "jobs.json").write_text(json.dumps({"max_jobs": JOBS}), encoding="utf-8")
    for n in range(SKILLS):  # read when the site starts
        write_collector(folder / "plugins", f"feed-{n:03d}", COLLECTOR)
        for name, source in ((f"tool_{n:03d}", PLUGIN_SKILL), (f"broken_{n:03d}", "this is not python\n")):
            skill = folder / "plugins" / "skills" / name
            skill.mkdir(parents=True)
            (skill / "__init__.py").write_text(source, encoding="utf-8")
        for where in (".agents/skills", "skills-drafts"):
            skill = folder / "ws" / where / f"s-{n:03d}"
            skill.mkdir(parents=True)
            (skill / "SKILL.md").write_text(
                f"---\nname: s-{n:03d}\ndescription: Skill {n}, put here by hand.\n---\nDo {n}.\n", encoding="utf-8"
            )
    site = start_site(folder)
    ws, root = site.workspace, site.root
    (root / "notes" / "clips").mkdir(parents=True)
    for n in range(N):
        (root / "notes" / "clips" / f"clip-{n:05d}.md").write_text(f"clip {n}\n", encoding="utf-8")
    for n in range(CHATS):
        day = root / "conversations" / f"chat-{n:05d}"
        day.mkdir(parents=True)
        (day / "2026-11-30.jsonl").write_text("", encoding="utf-8")
    ws.write_json(
        "facts/facts.json",
        [{"id": f"f{n}", "subject": "owner", "attribute": f"a{n}", "value": f"v{n}", "status": "current",
          "source": "user", "time": "2026-11-30T10:00:00+00:00"} for n in range(N)],
    )  # fmt: skip
    ws.write_json(
        "jobs/jobs.json",
        [{"id": f"j{n}", "name": f"job {n}", "cron": "0 19 * * 0", "message": "hi",
          "created_at": "2026-11-01T00:00:00+00:00"} for n in range(JOBS)],
    )  # fmt: skip
    ws.write_json(
        "reminders/reminders.json",
        [{"id": f"r{n}", "text": f"reminder {n}", "due_at": "2026-12-30T10:00:00+00:00", "status": "pending",
          "chat_id": "42"} for n in range(N)],
    )  # fmt: skip
    yield site
    site.close()


@pytest.fixture(scope="module")
def client(site):
    with httpx.Client(base_url=site.base, timeout=120, headers={"Authorization": f"Bearer {WEB_TOKEN}"}) as client:
        yield client


def get(client, path: str) -> str:
    answer = client.get(path)
    assert answer.status_code == 200, answer.text[:300]
    assert len(answer.content) < PAGE_BYTES, f"{path}: {len(answer.content)} bytes"
    return answer.text


def pager(html: str, noun: str) -> tuple[str, dict[str, str]]:
    """The line of the pager of ``noun`` as text, and its links by their words."""
    found = re.search(rf'<p class="note pager">({noun} .*?)</p>', html)
    assert found, "no pager on the page"
    links = {word: unescape(href) for href, word in re.findall(r'<a href="([^"]*)">(\w+)</a>', found.group(1))}
    return unescape(re.sub(r"<[^>]+>", "", found.group(1))), links


@pytest.mark.parametrize(
    ("path", "noun", "entry", "total"),
    [
        ("/memory/notes", "Files", r'<li><a href="/file\?path=notes', N + 2),  # and the site's two notes
        ("/memory/facts", "Facts", r'<tr class="current">', N),
        ("/conversations", "Chats", r"<li><strong><bdi>", CHATS + 1),  # and the site's chat
        ("/jobs", "Jobs", r'<li class="job"', JOBS),
        ("/reminders", "Reminders", r'<li class="reminder"', N),
    ],
)
def test_a_list_of_20000_shows_a_page_and_leads_to_the_next(client, path, noun, entry, total):
    pages_of(client, path, noun, entry, total)


@pytest.mark.parametrize(
    ("path", "noun", "entry", "api", "key"),
    [
        ("/skills", "Skills", r'<details class="skill"', "/api/skills", "skills"),  # and the built-in ones
        ("/skills?errors_from=0", "Errors", r'<li class="error">', "/api/skills", "errors"),  # and the site's one
        ("/skills/install", "Installed", r'<li class="skill" id="i-', "/api/skills/install", "installed"),
        ("/skills/drafts", "Drafts", r'<li class="draft"', "/api/skills/drafts", "drafts"),
        ("/collectors", "Collectors", r'<li class="collector', "/api/collectors", "collectors"),  # and the site's two
    ],
)
def test_skills_drafts_and_collectors_are_paged_too(client, path, noun, entry, api, key):
    total = len(client.get(api).json()[key])
    assert total >= SKILLS
    pages_of(client, path, noun, entry, total)


def pages_of(client, path: str, noun: str, entry: str, total: int) -> None:
    """The first page, the second, and the last, by the pager's links."""
    html = get(client, path)
    assert len(re.findall(entry, html)) <= window.ENTRIES
    line, links = pager(html, noun)
    assert line == f"{noun} 1–{window.ENTRIES} of {total} · later"
    assert set(links) == {"later"}
    html = get(client, links["later"])
    line, links = pager(html, noun)
    assert line == f"{noun} {window.ENTRIES + 1}–{2 * window.ENTRIES} of {total} · earlier · later"
    assert set(links) == {"earlier", "later"}
    last = get(client, f"{links['later'].split('from=')[0]}from={total - 1}")
    line, links = pager(last, noun)
    assert line.endswith(f"of {total} · earlier") and set(links) == {"earlier"}


def test_the_next_page_shows_the_next_entries(client):
    first = get(client, "/jobs")
    second = get(client, pager(first, "Jobs")[1]["later"])
    shown = re.findall(r'<li class="job" id="j-(j\d+)"', first + second)
    assert len(shown) == len(set(shown)) == 2 * window.ENTRIES


def test_run_now_on_a_later_page_of_collectors_comes_back_to_that_page(client):
    """The "Run now" of a collector on page 2 leads back to page 2 with the run's outcome, not to page 1; on
    page 1 the address stays without ``from=``."""
    second = get(client, pager(get(client, "/collectors"), "Collectors")[1]["later"])
    action = unescape(re.findall(r'<form method="post" action="(/collectors/feed-\d+/run[^"]*)"', second)[0])
    name = action.split("/")[2]
    answer = client.post(action)
    assert answer.status_code == 302, answer.text[:300]
    back = get(client, answer.headers["location"])
    assert pager(back, "Collectors")[0].startswith(f"Collectors {window.ENTRIES + 1}–{2 * window.ENTRIES} of ")
    assert f"<bdi>{name}</bdi>: <bdi>ok</bdi>" in back and f'id="c-{name}"' in back
    first = re.findall(r'<form method="post" action="(/collectors/[^"]*/run[^"]*)"', get(client, "/collectors"))[0]
    assert "from=" not in first
    assert client.post(unescape(first)).headers["location"].startswith("/collectors?ran=")
