"""The Chat page (issue 43, messaging_llm_bot/channels/webchat/) through the real bot process, in headless
Chromium: a message gets its answer streamed in, an ``ask`` call is approved with a button, a reload shows
the history, and the page fits a phone; plus its guarantees over HTTP (no sign-in, CSRF, bounds).

One bot process (the web chat its only channel, the fake model server behind it) and one Chromium for the
module; skipped with a one-line reason when Chromium, chromedriver or Selenium are missing."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from tests import browser as chromium
from tests.conftest import write_test_skills
from tests.crash_bot import BotProcess, echo_reply
from tests.fakes.chat_server import FakeChatServer
from tests.waiting import wait_until

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = [
    pytest.mark.slow(reason="starts the bot and headless Chromium once for the module; the steps build on it"),
    pytest.mark.timeout(180),
]

TOKEN = "chat-page-token-" + "c" * 24
READY = "webchat: the Chat page answers"
STREAMED = ['{"reply": "The answer ', "grows ", "word ", "by ", "word ", "on ", "the ", 'page."}']


#: A reply a model led by a page or a mail could write: an element the test looks for, scripts that would set the
#: title, a ``javascript:`` link as HTML and as Markdown.
MARKUP = (
    "<b id=planted>X</b><img src=x onerror=\"document.title='RAN'\"><script>document.title='RAN'</script>"
    "<a id=planted-link href=\"javascript:document.title='RAN'\">j</a> [link](javascript:document.title='RAN')"
)
#: A file name that shows as "invoice_exe.pdf" but is "invoice_fdp.exe": a right-to-left override in it.
SPOOFED = "invoice_\u202efdp.exe"
#: Hebrew as written: the mark after its "!" stays.
HEBREW = "שלום!\u200f 5 תפוחים"
SLOW_ASKED: list[str] = []
#: Set by test_1 once the page showed part of the answer: the stream's last piece waits for it (at most 20 s),
#: so the answer is seen growing however fast or slow the machine is, and no sooner than it is seen.
PARTIAL_SEEN = threading.Event()


def _last_piece_after_partial_seen(index: int) -> None:
    if index == len(STREAMED) - 1:
        PARTIAL_SEEN.wait(20)


def model(request: dict) -> Any:
    """The fake model: a streamed answer to 'hello' (its end held until the page showed part), a save_note call
    for 'save a note', a first answer to 'slow question' that takes a minute (the bot is killed meanwhile), else an
    echo."""
    last = request["messages"][-1]["content"]
    if last.startswith("slow question"):
        SLOW_ASKED.append(last)
        if len(SLOW_ASKED) == 1:
            return {"content": json.dumps({"reply": "too late"}), "delay": 60}
        return json.dumps({"reply": "answered now"})
    if last.startswith("show markup"):  # a reply, and a file's caption (shown as the model wrote it)
        return json.dumps({"skill": "send_file", "args": {"path": "notes/markup.txt", "caption": MARKUP}})
    if last.startswith(("Result of skill", "Skill call")) and "markup.txt" in last:
        return json.dumps({"reply": "sent " + MARKUP})
    if last.startswith(("Result of skill", "Skill call")):
        return json.dumps({"reply": "after the call: " + last.split("\n")[0]})
    if last.startswith("[Attachment]"):
        return json.dumps({"reply": "I see your picture."})
    if last.startswith("send me the note"):
        return json.dumps({"skill": "send_file", "args": {"path": "notes/frompage.md", "caption": "your note"}})
    if last.startswith("save a note"):
        return json.dumps({"skill": "save_note", "args": {"name": "frompage", "text": "kept"}})
    if "hello" in last:
        return {"content": "".join(STREAMED), "stream_chunks": STREAMED, "chunk_gate": _last_piece_after_partial_seen}
    return echo_reply(request)


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("webchat")
    with FakeChatServer() as chat_server:
        chat_server.set_handler(model)
        config = {
            "llm": {
                "runners": [
                    {"name": "fake", "base_url": chat_server.base_url, "model": "fake-model", "timeout_seconds": 10}
                ],
                "max_skill_rounds": 3,
                "retries_per_runner": 0,
                "stream": True,
            },
            "runtime": {
                "timezone": "Europe/Berlin",
                "skills_dirs": [str(write_test_skills(root / "skills"))],
                "log_level": "INFO",
            },
            "telegram": {"token": ""},
            "memory": {"enabled": False},
            "policy": {"skills": {"save_note": "ask"}},
            "web": {"enabled": True, "chat": True, "port": 0, "token": TOKEN},
        }
        path = root / "config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        process = BotProcess(path, root / "workspace", root / "bot.log")
        with process:
            process.start()
            wait_until(lambda: READY in process.run_log() or process.proc.poll() is not None, timeout=60)
            assert READY in process.run_log(), process.run_log()[-3000:]
            port = re.search(r"web page: http://127\.0\.0\.1:(\d+)/", process.run_log())
            assert port, process.run_log()[-3000:]
            process.base = f"http://127.0.0.1:{port.group(1)}"  # type: ignore[attr-defined]
            process.chat_server = chat_server  # type: ignore[attr-defined]
            yield process


def restart(process: BotProcess) -> None:
    """Start the killed bot again and wait for its web chat (the page's port is a new one)."""
    process.start()
    wait_until(lambda: READY in process.run_log() or process.proc.poll() is not None, timeout=60)
    assert READY in process.run_log(), process.run_log()[-3000:]
    port = re.search(r"web page: http://127\.0\.0\.1:(\d+)/", process.run_log())
    assert port, process.run_log()[-3000:]
    process.base = f"http://127.0.0.1:{port.group(1)}"  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def browser():
    if not chromium.installed():
        pytest.skip(chromium.missing())
    with chromium.chromium("390,844", implicit_wait=0) as driver:  # a phone's width
        yield driver


def texts(driver, css: str) -> list[str]:
    try:
        return [element.text for element in driver.find_elements(By.CSS_SELECTOR, css)]
    except WebDriverException as error:
        if not chromium.gone(error):
            raise
        return []


def until(driver, condition, what: str, timeout: float = 30):
    return WebDriverWait(
        driver, timeout, poll_frequency=0.1, ignored_exceptions=(StaleElementReferenceException,)
    ).until(lambda d: condition(d), what)


def contents(driver, css: str) -> list[str]:
    """Each element's textContent: the text as the page holds it, invisible marks included."""
    return [element.get_attribute("textContent") for element in driver.find_elements(By.CSS_SELECTOR, css)]


def send(driver, text: str) -> None:
    box = driver.find_element(By.ID, "text")
    box.send_keys(text)
    driver.find_element(By.ID, "send").click()


def severe(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


# -- HTTP: the guarantees -----------------------------------------------------------


def signed_in(bot, request: pytest.FixtureRequest) -> tuple[httpx.Client, str]:
    """A client with the page's session cookie (signed in by ?token=) and its form token from the page."""
    client = httpx.Client(base_url=bot.base, timeout=10)
    request.addfinalizer(client.close)
    client.get(f"/chat?token={TOKEN}", follow_redirects=True)
    page = client.get("/chat")
    token = re.search(r'<meta name="csrf" content="([0-9a-f]+)">', page.text)
    assert page.status_code == 200 and token, page.text[:500]
    return client, token.group(1)


def test_without_sign_in_the_chat_is_refused(bot, request: pytest.FixtureRequest) -> None:
    bare = httpx.Client(base_url=bot.base, timeout=10)
    request.addfinalizer(bare.close)
    for method, path in [
        ("GET", "/chat"),
        ("GET", "/chat/history"),
        ("GET", "/chat/events"),
        ("GET", "/chat/chat.js"),
        ("GET", "/chat/file/1"),
    ]:
        assert bare.request(method, path).status_code == 401, path
    answer = bare.post("/chat/send", json={"id": "a" * 16, "text": "hello from nobody"})
    assert answer.status_code == 401
    assert bare.post(f"/chat/upload?id={'a' * 16}&name=x.txt", content=b"nobody's file").status_code == 401
    client, _ = signed_in(bot, request)
    assert all("hello from nobody" not in m["text"] for m in client.get("/chat/history").json()["messages"])
    assert not list((bot.workspace / "inbox").glob("*/x.txt")), "no file was saved"


def test_a_post_without_the_sessions_form_token_changes_nothing(bot, request: pytest.FixtureRequest) -> None:
    client, token = signed_in(bot, request)
    refused = client.post("/chat/send", json={"id": "b" * 16, "text": "forged message"})
    assert refused.status_code == 403
    other = client.post(
        "/chat/send", json={"id": "b" * 16, "text": "forged message"}, headers={"X-XSRFToken": "0" * 64}
    )
    assert other.status_code == 403
    history = client.get("/chat/history").json()["messages"]
    assert all("forged" not in m["text"] for m in history)
    assert client.post("/chat/answer", json={"id": "x", "yes": True}).status_code == 403
    assert client.post(f"/chat/upload?id={'b' * 16}&name=forged.txt", content=b"forged file").status_code == 403
    assert not list((bot.workspace / "inbox").glob("*/forged.txt")), "no file was saved"
    page = client.get("/chat")
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert token


def test_a_message_over_the_bound_or_without_an_id_is_refused(bot, request: pytest.FixtureRequest) -> None:
    client, token = signed_in(bot, request)
    headers = {"X-XSRFToken": token}
    before = client.get("/chat/history").json()["messages"]
    long = client.post("/chat/send", json={"id": "c" * 16, "text": "x" * 16_001}, headers=headers)
    assert long.status_code == 413 and "16000" in long.json()["error"]
    assert client.post("/chat/send", json={"id": "../x", "text": "hi"}, headers=headers).status_code == 400
    assert client.post("/chat/send", json={"id": "d" * 16, "text": "  "}, headers=headers).status_code == 400
    assert client.post("/chat/answer", json={"id": "nope", "yes": True}, headers=headers).status_code == 409
    assert client.get("/chat/history").json()["messages"] == before, "nothing refused was stored"


# -- the browser ----------------------------------------------------------------------

#: The browser steps this process ran to their end. Each step builds on the ones before it (the open page, its
#: history, the note test_2 saves): a step whose predecessor did not run here (the step run alone, or xdist
#: handing the module's tests to several workers) runs that one first, with the same bot and browser.
STEPS_RUN: set[str] = set()


def after(step, bot, browser) -> None:
    """Run the earlier browser ``step`` first unless this process ran it."""
    if step.__name__ not in STEPS_RUN:
        step(bot, browser)


def test_1_a_message_gets_its_answer_streamed_in(bot, browser) -> None:
    browser.get(f"{bot.base}/chat?token={TOKEN}")
    until(browser, lambda d: d.current_url == f"{bot.base}/chat", "the sign-in redirect")
    until(browser, lambda d: d.find_elements(By.ID, "text"), "the composer")
    send(browser, "hello there")
    until(browser, lambda d: "hello there" in texts(d, "#messages li.owner"), "the owner's message shown")
    # While the model streams, the answer grows in the live line, before it arrives as a message.
    until(
        browser,
        lambda d: (lambda live: "The answer" in live and not live.endswith("page."))(
            d.find_element(By.ID, "live").text
        ),
        "part of the answer streamed in",
    )
    assert not any("The answer grows" in t for t in texts(browser, "#messages li.assistant"))
    PARTIAL_SEEN.set()
    until(
        browser,
        lambda d: "The answer grows word by word on the page." in texts(d, "#messages li.assistant"),
        "the whole answer as a message",
    )
    assert browser.find_element(By.ID, "live").get_attribute("hidden") is not None
    # A phone's width: nothing wider than the screen.
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    assert severe(browser) == []
    STEPS_RUN.add("test_1_a_message_gets_its_answer_streamed_in")


def test_2_an_ask_call_is_approved_with_a_button(bot, browser) -> None:
    after(test_1_a_message_gets_its_answer_streamed_in, bot, browser)
    send(browser, "save a note please")
    question = until(
        browser, lambda d: [e for e in d.find_elements(By.CSS_SELECTOR, "#messages li.ask")], "the question"
    )[0]
    assert "save_note" in question.text
    note = bot.workspace / "notes" / "frompage.md"
    assert not note.exists(), "nothing runs before the owner's yes"
    question.find_element(By.XPATH, ".//button[text()='Yes']").click()
    until(browser, lambda d: any("after the call" in t for t in texts(d, "#messages li.assistant")), "the reply")
    assert not browser.find_elements(By.CSS_SELECTOR, "#messages li.ask"), "the answered question is gone"
    wait_until(note.exists, what="the note the approved call saved")
    STEPS_RUN.add("test_2_an_ask_call_is_approved_with_a_button")


def test_3_a_reload_shows_the_history(bot, browser) -> None:
    after(test_2_an_ask_call_is_approved_with_a_button, bot, browser)
    browser.refresh()
    until(
        browser,
        lambda d: (
            len(texts(d, "#messages li.owner")) >= 2
            and any("after the call" in t for t in texts(d, "#messages li.assistant"))
        ),
        "the history after the reload",
    )
    owner = texts(browser, "#messages li.owner")
    assert owner[:2] == ["hello there", "save a note please"]
    folder = os.environ.get("WEB_SCREENSHOTS")  # docs/web.md's picture: WEB_SCREENSHOTS=docs/images
    if folder:
        browser.save_screenshot(str(Path(folder) / "web-chat.png"))
    assert texts(browser, "#messages li.assistant")[0] == "The answer grows word by word on the page."
    # One conversation, kept by the agent as a Telegram chat's is: the second turn's model call had the first.
    asked = [r for r in bot.chat_server.chat_requests if json.dumps(r["messages"]).count("save a note please")]
    assert asked and "The answer grows word by word" in json.dumps(asked[0]["messages"])
    assert severe(browser) == []


def test_3b_a_picture_in_and_a_file_out(bot, browser, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from PIL import Image

    after(test_2_an_ask_call_is_approved_with_a_button, bot, browser)  # the page open, the note saved
    picture = tmp_path / "garden.png"
    Image.new("RGB", (40, 30), (20, 160, 60)).save(picture)
    browser.find_element(By.ID, "text").send_keys("what is this picture")
    browser.find_element(By.ID, "file").send_keys(str(picture))
    shown = until(
        browser,
        lambda d: [
            i
            for i in d.find_elements(By.CSS_SELECTOR, "#messages li.owner img")
            if i.get_attribute("naturalWidth") == "40"
        ],
        "the picture shown from the page's store",
    )
    assert shown
    until(browser, lambda d: "I see your picture." in texts(d, "#messages li.assistant"), "the answer to the picture")
    saved = list((bot.workspace / "inbox").glob("*/garden.png"))
    assert len(saved) == 1 and saved[0].read_bytes() == picture.read_bytes()
    asked = [r for r in bot.chat_server.chat_requests if "garden.png" in json.dumps(r["messages"])]
    assert asked and "untrusted" in json.dumps(asked[0]["messages"][-1]), "the file is outside content"

    send(browser, "send me the note")

    def sent_file(d):
        for question in d.find_elements(By.CSS_SELECTOR, "#messages li.ask button"):  # after outside content it asks
            if question.text == "Yes" and question.is_enabled():
                question.click()
        return [a for a in d.find_elements(By.CSS_SELECTOR, "#messages li.assistant a.file") if "frompage.md" in a.text]

    link = until(browser, sent_file, "the file sent to the page")[0]
    client, _ = signed_in(bot, request)
    got = client.get(link.get_attribute("href").replace(bot.base, ""))
    assert got.status_code == 200 and got.content == b"kept"
    assert got.headers["Content-Disposition"].startswith("attachment")
    assert client.get("/chat/file/99999").status_code == 404
    assert severe(browser) == []


def test_3c_a_file_name_with_a_direction_character_is_shown_without_it(
    bot, browser, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A file the owner downloaded somewhere, named with a right-to-left override, sent from the page: its link
    shows the name as it is saved. (The workspace refuses such a name, so the assistant cannot send one:
    tests/test_security.py::test_a_file_name_with_a_direction_character_is_refused_and_never_listed.)"""
    after(test_1_a_message_gets_its_answer_streamed_in, bot, browser)
    spoofed = tmp_path / SPOOFED
    spoofed.write_bytes(b"MZ not an invoice")
    browser.find_element(By.ID, "file").send_keys(str(spoofed))

    def link(d):
        return [a for a in d.find_elements(By.CSS_SELECTOR, "#messages li.owner a.file") if "invoice" in a.text]

    # The page shows the name as the download names it: the override would show "invoice_exe.pdf".
    assert until(browser, link, "the file's link on the page")[0].text == "⬇ invoice__fdp.exe"
    client, _ = signed_in(bot, request)
    shown = [(m["text"], (m.get("file") or {}).get("name", "")) for m in client.get("/chat/history").json()["messages"]]
    assert not [pair for pair in shown if "\u202e" in "".join(pair)]
    assert severe(browser) == []


def test_3e_a_direction_character_in_a_message_and_its_answer_is_shown_as_its_mark(bot, browser) -> None:
    """A right-to-left override and a right-to-left mark among digits in the owner's message and in the answer that
    quotes it (as an answer quoting a mail would): both show their marks, neither reads "invoice_exe.pdf" or
    "200 100" (the rule of assistant_framework/direction.py in chat.js); Hebrew keeps the mark beside its letters."""
    after(test_1_a_message_gets_its_answer_streamed_in, bot, browser)
    send(browser, f"pay \u200f100 200 {SPOOFED} today")
    mark = "pay ‹U+200F›100 200 invoice_‹U+202E›fdp.exe today"
    until(browser, lambda d: mark in texts(d, "#messages li.owner"), "the owner's message with the marks")
    until(browser, lambda d: f"re: {mark}" in texts(d, "#messages li.assistant"), "the answer with the marks")
    assert not [t for t in texts(browser, "#messages li") if "\u202e" in t]
    # Hebrew keeps the mark after its "!" (textContent: WebDriver's text leaves the marks out).
    send(browser, HEBREW)
    until(browser, lambda d: f"re: {HEBREW}" in contents(d, "#messages li.assistant"), "the Hebrew answer as written")
    assert HEBREW in contents(browser, "#messages li.owner")


def test_3d_markup_in_a_reply_and_a_caption_is_shown_as_text(bot, browser) -> None:
    after(test_1_a_message_gets_its_answer_streamed_in, bot, browser)
    (bot.workspace / "notes").mkdir(exist_ok=True)
    (bot.workspace / "notes" / "markup.txt").write_text("plain", encoding="utf-8")
    send(browser, "show markup")

    def caption_shown(d):
        for question in d.find_elements(By.CSS_SELECTOR, "#messages li.ask button"):  # after outside content it asks
            if question.text == "Yes" and question.is_enabled():
                question.click()
        return any("<b id=planted>" in t for t in texts(d, "#messages li.assistant"))

    until(browser, caption_shown, "the caption as the model wrote it, as text")
    until(browser, lambda d: any(t.startswith("sent ") for t in texts(d, "#messages li.assistant")), "the reply")
    for _ in range(2):  # as it arrived, and from the history after a reload
        assert not browser.find_elements(By.ID, "planted") and not browser.find_elements(By.ID, "planted-link")
        assert "RAN" not in browser.title
        assert not browser.find_elements(By.CSS_SELECTOR, "#messages li.assistant a:not(.file)")  # no link of it
        browser.refresh()
        until(browser, caption_shown, "the history")


def test_4_a_sigkill_mid_turn_answers_the_message_once_after_the_restart(bot, request: pytest.FixtureRequest) -> None:
    client, token = signed_in(bot, request)
    sent = client.post("/chat/send", json={"id": "e" * 16, "text": "slow question"}, headers={"X-XSRFToken": token})
    assert sent.status_code == 202
    wait_until(lambda: len(SLOW_ASKED) == 1, what="the model asked the slow question")
    bot.kill()
    restart(bot)
    client, token = signed_in(bot, request)

    def history() -> list[dict]:
        return client.get("/chat/history").json()["messages"]

    wait_until(lambda: any(m["text"] == "answered now" for m in history()), what="the answer after the restart")
    texts = [m["text"] for m in history()]
    assert texts.count("slow question") == 1 and texts.count("answered now") == 1 and "too late" not in texts
    assert len(SLOW_ASKED) == 2  # asked once more, by the next start
    # The item is completed, and the same message sent again (a browser repeating its POST) is not taken twice.
    wait_until(lambda: not Inbox(Workspace(bot.workspace)).pending(), what="the item completed")
    again = client.post("/chat/send", json={"id": "e" * 16, "text": "slow question"}, headers={"X-XSRFToken": token})
    assert again.status_code == 202 and again.json()["message"] is None
    assert [m["text"] for m in history()].count("slow question") == 1
    assert len(SLOW_ASKED) == 2
