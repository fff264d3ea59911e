"""A memory file or a conversation day too long for one page, in headless Chromium (tests/browser.py) against a
real ``assistant web`` site: the page shows a bounded part of it and leads to the rest, a search hit (or a fact's
source) opens the part that holds it, and the editor is not offered for a file it cannot hold whole
(assistant_framework/web/window.py).

Before, the file page held the whole file: a 20 MB note of 300,000 lines made a 41 MB page that Chromium took
104 s to load, and a collector's items or a document's saved text grow by themselves; a day of 20,000 turns
made a 22 MB page (15 s)."""

from __future__ import annotations

import httpx
import pytest

from assistant_framework.stores import FactStore
from assistant_framework.web import window
from tests import browser as chromium
from tests.web_site import WEB_TOKEN, start_site

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = [
    pytest.mark.slow(reason="starts headless Chromium once for the module over a site with a long note"),
    pytest.mark.timeout(180),
]

if not chromium.installed():
    pytest.skip(chromium.missing(), allow_module_level=True)

LINES = 100_000
#: The line the search finds, far past the first page.
FOUND = 87_654
#: A busy group's day: its turns, the one the search finds, and the one a fact was taken from.
TURNS = 1_000
FOUND_TURN = 901
FACT_TURN = 777
GROUP = "-100123"
DAY = "2026-11-30"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = start_site(tmp_path_factory.mktemp("web"))
    text = "\n".join(
        "zanzibar ferry timetable" if n == FOUND else f"line {n} of a long journal " + "x" * 40
        for n in range(1, LINES + 1)
    )
    site.workspace.write_text("notes/journal.md", text + "\n")
    site.workspace.write_text("notes/wide.md", "start " + "w" * 3_000_000 + "\n")
    for n in range(1, TURNS + 1):
        text = "the quokka census is on Friday" if n == FOUND_TURN else f"message {n} in the group"
        if n == 2:
            text = "a long mail " + "m" * 100_000
        site.workspace.append_jsonl(
            f"conversations/{GROUP}/{DAY}.jsonl",
            {
                "time": f"{DAY}T10:00:00+00:00",
                "conversation": GROUP,
                "role": "user",
                "text": text,
                "turn_id": f"{GROUP}:{DAY}:{n}",
            },
        )
    FactStore(site.workspace).add(
        "owner", "census", "Friday", source="extraction", source_ref=f"{GROUP}:{DAY}:{FACT_TURN}"
    )
    yield site
    site.close()


@pytest.fixture(scope="module")
def browser(site):
    with chromium.chromium("1100,900", implicit_wait=0) as driver:
        driver.set_page_load_timeout(30)
        driver.get(f"{site.base}/memory?token={WEB_TOKEN}")
        yield driver


def page_bytes(site, path: str) -> int:
    with httpx.Client(base_url=site.base, timeout=60) as client:
        answer = client.get(path, headers={"Authorization": f"Bearer {WEB_TOKEN}"})
        assert answer.status_code == 200, answer.text[:300]
        return len(answer.content)


def test_a_long_file_is_shown_a_page_at_a_time(browser, site):
    # The page is bounded whatever the file's length: 100,000 lines (6 MB) and one line of 3 MB.
    assert page_bytes(site, "/file?path=notes/journal.md") < 400_000
    assert page_bytes(site, "/file?path=notes/wide.md") < 50_000
    browser.get(f"{site.base}/file?path=notes/journal.md")
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.lines tr")) == window.ROWS
    assert browser.find_element(By.CSS_SELECTOR, "p.pager").text == f"Lines 1–{window.ROWS} of {LINES} · later"
    browser.find_element(By.LINK_TEXT, "later").click()
    assert browser.find_element(By.ID, f"L{window.ROWS + 1}").text.endswith(
        f"line {window.ROWS + 1} of a long journal " + "x" * 40
    )
    assert not browser.find_elements(By.ID, "L1")
    # The wide line is cut, and says by how much.
    browser.get(f"{site.base}/file?path=notes/wide.md")
    assert (
        browser.find_element(By.CSS_SELECTOR, "#L1 small.more").text
        == f"… {3_000_006 - window.ROW_CHARS} more characters"
    )


def test_a_search_hit_opens_the_part_of_the_file_that_holds_it(browser, site):
    browser.get(f"{site.base}/memory?q=zanzibar")
    hit = browser.find_element(By.CSS_SELECTOR, "li.hit a.where")
    assert "notes/journal.md" in hit.text
    hit.click()
    line = browser.find_element(By.ID, f"L{FOUND}")
    assert "zanzibar ferry timetable" in line.text
    first = FOUND // window.ROWS * window.ROWS + 1
    assert browser.find_element(By.CSS_SELECTOR, "p.pager").text.startswith(f"Lines {first}–")


def test_the_editor_is_not_offered_for_a_file_it_cannot_hold_whole(browser, site):
    browser.get(f"{site.base}/file?path=notes/journal.md")
    assert not browser.find_elements(By.LINK_TEXT, "Edit")
    browser.get(f"{site.base}/file?path=notes/journal.md&edit=1")
    assert not browser.find_elements(By.TAG_NAME, "textarea")
    assert "too large to edit here" in browser.find_element(By.CSS_SELECTOR, "p.note[role=alert]").text
    # A note of ordinary size is edited as before.
    browser.get(f"{site.base}/file?path=notes/shopping.md")
    browser.find_element(By.LINK_TEXT, "Edit").click()
    assert "oat milk" in browser.find_element(By.TAG_NAME, "textarea").get_attribute("value")


def test_a_long_conversation_day_is_shown_a_page_at_a_time(browser, site):
    assert page_bytes(site, f"/conversations/{GROUP}/{DAY}") < 100_000
    browser.get(f"{site.base}/conversations/{GROUP}/{DAY}")
    assert len(browser.find_elements(By.CSS_SELECTOR, "ol.turns > li")) == window.TURNS
    pager = f"Turns 1–{window.TURNS} of {TURNS} · later"
    assert browser.find_element(By.CSS_SELECTOR, "p.pager").text == pager
    long_turn = browser.find_element(By.CSS_SELECTOR, "ol.turns > li:nth-child(2) small.more")
    assert long_turn.text == f"… {len('a long mail ') + 100_000 - window.TURN_CHARS} more characters"
    browser.find_element(By.LINK_TEXT, "later").click()
    assert browser.find_element(By.CSS_SELECTOR, "p.pager").text.startswith(f"Turns {window.TURNS + 1}–")


def test_a_search_hit_and_a_facts_source_open_the_page_of_their_turn(browser, site):
    browser.get(f"{site.base}/memory?q=quokka")
    browser.find_element(By.CSS_SELECTOR, "li.hit a.where").click()
    assert "the quokka census is on Friday" in browser.find_element(By.ID, f"{GROUP}:{DAY}:{FOUND_TURN}").text
    browser.get(f"{site.base}/memory/facts")
    browser.find_element(By.LINK_TEXT, f"{GROUP}:{DAY}:{FACT_TURN}").click()
    assert f"message {FACT_TURN} in the group" in browser.find_element(By.ID, f"{GROUP}:{DAY}:{FACT_TURN}").text
