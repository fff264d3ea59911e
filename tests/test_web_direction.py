"""Direction characters in stored text, in headless Chromium (tests/browser.py) against a real ``assistant web``
site: a note, a fact, a job, a reminder, a conversation turn, a trace, collector output, a drafted skill and the
search box each hold a right-to-left override (U+202E) and a right-to-left isolate (U+2067) left open, and a
right-to-left mark (U+200F) and an Arabic letter mark (U+061C) among Latin words and digits, as a mail, a
forwarded text or a page saved as a note can; a note's name holds a right-to-left mark.

Every page shows each as its mark (‹U+202E›) and none of them live, so what follows the text on the page (a
label, a count, a link) reads as it should; a name written right to left is isolated, so it cannot move the
count beside it, and Hebrew text keeps the marks beside its letters. Before, a job named with an override showed
its "from outside content" label reversed, and "pay <U+200F>100 200 300" read "pay 300 200 100".
(assistant_framework/direction.py; the template escape is web/base.py's ``page_escape``.)"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from assistant_framework.stores import FactStore
from assistant_framework.traces import TraceStore, new_trace_id
from assistant_framework.web import window
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

#: The marks, invisible letters of their direction, reverse the numbers after them ("pay 300 200 100",
#: "05-12-2024"); the controls are left open: the override reverses the rest of its line, the isolate moves it.
SPOOF = "pay \u200f100 200 300 \u061c2024-12-05 invoice_\u202efdp.exe \u2067see"
MARKS = ("‹U+200F›", "‹U+061C›", "‹U+202E›", "‹U+2067›")
LIVE = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
#: A note's name: the mark puts the numbers after it in reverse ("report3 2 1 .md").
SPOOF_NAME = "notes/report\u200f 1 2 3.md"
#: Hebrew as written, with the marks its writers put beside its letters: they stay.
HEBREW_NOTE = "notes/greeting.md"
HEBREW_TEXT = "שלום!\u200f 5 תפוחים"
#: A conversation named in Hebrew (a folder may be: only direction controls are refused in a path).
HEBREW_CHAT = "שלום"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("web")
    tool = folder / "plugins" / "skills" / "spoof_tool"  # a plugin skill put there by hand, read at the start
    tool.mkdir(parents=True)
    (tool / "__init__.py").write_text(f"DESCRIPTION = {SPOOF!r}\n\ndef run(workspace, args):\n    return args\n")
    site = start_site(folder)
    ws = site.workspace
    ws.write_text("notes/saved-page.md", f"# Saved page\n\nPay the {SPOOF} today.\n")
    ws.write_text(SPOOF_NAME, "# Report\n")
    ws.write_text(HEBREW_NOTE, HEBREW_TEXT + "\n")
    FactStore(ws).add("owner", "invoice", SPOOF, source=SPOOF, source_ref=SPOOF, untrusted=True)
    ws.write_json(
        "jobs/jobs.json",
        [{"id": "j1", "name": SPOOF, "cron": "0 19 * * 0", "message": SPOOF, "untrusted": True,
          "created_at": "2026-11-01T00:00:00+00:00"}],
    )  # fmt: skip
    ws.write_json(
        "reminders/reminders.json",
        [
            {"id": "r1", "text": SPOOF, "due_at": "2026-12-30T10:00:00+00:00", "status": "pending",
             "chat_id": SPOOF, "untrusted": True},
            {"id": "r2", "text": SPOOF, "due_at": "2026-11-30T10:00:00+00:00", "status": "delivered",
             "chat_id": "42", "untrusted": True},
        ],
    )  # fmt: skip
    turn = {"time": f"{site.day}T10:00:00+00:00", "conversation": site.chat, "untrusted": True}
    ws.append_jsonl(
        f"conversations/{site.chat}/{site.day}.jsonl",
        {**turn, "role": "user", "text": SPOOF + " " + "x" * window.TURN_CHARS, "turn_id": f"{site.chat}:{site.day}:9"},
    )
    for n in range(1, 13):
        ws.append_jsonl(f"conversations/{HEBREW_CHAT}/2026-11-{n:02d}.jsonl", {**turn, "role": "user", "text": "שלום"})
    trace = new_trace_id()
    TraceStore(ws).write(
        {"id": trace, "conversation": SPOOF, "time": f"{site.day}T10:00:00+00:00", "ok": True, "runner": SPOOF,
         "model": SPOOF, "rounds": 1, "user_text": SPOOF, "reply": SPOOF,
         "recalled": [{"source": "notes", "path": "notes/saved-page.md", "ref": SPOOF, "snippet": SPOOF}],
         "skill_calls": [{"skill": "web", "args": {"url": SPOOF}, "result": SPOOF}],
         "requests": [{"round": 1, "model": SPOOF, "messages": [{"role": "user", "content": SPOOF}]}]},
    )  # fmt: skip
    ws.write_text("collectors/writer/latest.md", SPOOF)
    ws.append_jsonl("collectors/writer/runs.jsonl", {"summary": SPOOF, "errors": [SPOOF]})
    ws.write_text(".agents/skills/spoof-installed/SKILL.md", "---\nname: spoof-installed\ndescription: x\n---\nx\n")
    ws.write_json("state/agent_skills.json", {"spoof-installed": {"source": SPOOF, "ref": SPOOF, "commit": "0" * 40}})
    ws.write_text("skills-drafts/spoof/SKILL.md", f"---\nname: spoof\ndescription: {SPOOF}\n---\n{SPOOF}\n")
    site.trace = trace  # type: ignore[attr-defined]
    yield site
    site.close()


@pytest.fixture(scope="module")
def browser(site):
    with chromium.chromium("1100,900", implicit_wait=0) as driver:
        driver.get(f"{site.base}/memory?token={WEB_TOKEN}")
        yield driver


#: Each character's box, in the order of the text: (top, left) of every character that is not a space.
BOXES = """
const boxes = [], range = document.createRange();
const walker = document.createTreeWalker(arguments[0], NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode;
  for (let i = 0; i < node.length; i++) {
    if (/\\s/.test(node.data[i])) continue;
    range.setStart(node, i); range.setEnd(node, i + 1);
    const box = range.getBoundingClientRect();
    boxes.push([Math.round(box.top), box.left]);
  }
}
return boxes;
"""


def reads_left_to_right(browser, element) -> bool:
    """Whether ``element``'s characters stand in the order of its text: left to right, line after line."""
    boxes = browser.execute_script(BOXES, element)
    assert boxes, element.get_attribute("outerHTML")
    return all(b[0] > a[0] or (b[0] == a[0] and b[1] > a[1]) for a, b in zip(boxes, boxes[1:], strict=False))


def test_direction_controls_are_shown_as_marks_on_every_page(browser, site):
    pages = [
        "/memory?q=invoice",
        f"/memory?q={quote(SPOOF)}",
        "/memory/facts",
        "/file?path=notes/saved-page.md",
        "/file?path=facts/facts.json",
        "/file?path=collectors/writer/latest.md",
        f"/conversations/{site.chat}/{site.day}",
        "/traces",
        f"/traces/{site.trace}",
        "/jobs",
        "/reminders",
        "/skills/drafts",
        "/skills",
        "/skills/install",
        "/collectors",
    ]
    for path in pages:
        browser.get(site.base + path)
        text = browser.find_element(By.TAG_NAME, "body").text
        assert not LIVE.search(text), f"a direction control is live on {path}"
        assert all(mark in text for mark in MARKS), f"no mark on {path}: {text[:300]!r}"


def test_a_note_shows_its_override_as_a_mark(browser, site):
    browser.get(f"{site.base}/file?path=notes/saved-page.md")
    line = browser.find_element(By.ID, "L3")
    assert line.text.endswith(
        "Pay the pay ‹U+200F›100 200 300 ‹U+061C›2024-12-05 invoice_‹U+202E›fdp.exe ‹U+2067›see today."
    )
    assert reads_left_to_right(browser, line.find_element(By.TAG_NAME, "pre"))


def test_the_editor_keeps_the_note_as_it_is(browser, site):
    """The mark is how the page shows the character, not what a save writes back."""
    browser.get(f"{site.base}/file?path=notes/saved-page.md&edit=1")
    assert SPOOF in browser.find_element(By.NAME, "content").get_attribute("value")


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("/jobs", "li.job div.row"),  # the job's name, then "prompt" and "from outside content"
        ("/reminders", "li.reminder div.row"),  # when, the chat it goes to, "from outside content"
        ("/reminders", "table.reminders-past td:nth-child(4)"),  # a delivered reminder's text and its label
        ("/memory/facts", "table.facts td:has(span.outside)"),  # the fact's source, its label and the turn
        ("/conversations/{chat}/{day}", "ol.turns p.text:has(small.more)"),  # a long turn, "… N more characters"
        ("/memory/notes", "ul.files a[href*='report']"),  # a note's name: its numbers, its ".md"
        ("/memory?q=report", "a.where"),  # a search hit's path, and its line's ref
    ],
)
def test_the_line_that_holds_the_text_reads_in_order(browser, site, path, line):
    """The text itself (its mark in place of the override) and what follows it on its line: an override left
    open reverses both, and puts the label before the text."""
    browser.get(site.base + path.format(chat=site.chat, day=site.day))
    element = browser.find_element(By.CSS_SELECTOR, line)
    assert reads_left_to_right(browser, element), f"{line} on {path} is reordered: {element.text[:200]!r}"
    assert "‹U+200F›" in element.text


def test_a_name_written_right_to_left_keeps_its_count_after_it(browser, site):
    """Without isolation the Hebrew name pulls the digits after it to its left: "12 שלום days"."""
    browser.get(f"{site.base}/conversations")
    card = next(li for li in browser.find_elements(By.CSS_SELECTOR, "ul.cards > li") if HEBREW_CHAT in li.text)
    name = card.find_element(By.TAG_NAME, "strong").rect
    count = card.find_element(By.CSS_SELECTOR, "span.count")
    assert count.text == "12 days"
    assert browser.execute_script(BOXES, count)[0][1] > name["x"] + name["width"]


def test_hebrew_keeps_the_marks_beside_its_letters(browser, site):
    """Right-to-left writing is shown as written: its letters, and the mark after its "!" live (no ‹U+200F›)."""
    browser.get(f"{site.base}/file?path={HEBREW_NOTE}")
    assert browser.find_element(By.CSS_SELECTOR, "#L1 pre").get_attribute("textContent") == HEBREW_TEXT
