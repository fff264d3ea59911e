"""The web page in a real browser: headless Chromium from Debian driven by Selenium and chromedriver (tests/browser.py).

Skipped with a one-line reason when Chromium, chromedriver or Selenium are missing
(``apt-get install chromium chromium-headless-shell chromium-driver``; ``.ci/run`` installs them). With
``WEB_SCREENSHOTS=docs/images`` the tests also save a screenshot of each page there (docs/web.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import browser as chromium
from tests.fakes.feed_server import StaticHTTPServer
from tests.web_site import API_KEY, WEB_TOKEN, start_site

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

# One Chromium for the module, started in the first test's setup (26 s once beside the rest of make test's
# four workers), and a page walk through one site: its phases may pass the per-test bound of tests/tiers.py.
pytestmark = [
    pytest.mark.slow(reason="starts headless Chromium once for the module; the walk goes through one site"),
    pytest.mark.timeout(180),
]

if not chromium.installed():
    pytest.skip(chromium.missing(), allow_module_level=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = start_site(tmp_path_factory.mktemp("web"))
    yield site
    site.close()


@pytest.fixture(scope="module")
def browser():
    with chromium.chromium("1100,900", implicit_wait=5) as driver:
        yield driver


def until(driver, timeout: float = 20) -> WebDriverWait:
    """A wait that looks again every 50 ms: a page here loads in tens of ms, and a look that came too early slept
    out WebDriverWait's default step of 0.5 s."""
    return WebDriverWait(driver, timeout, poll_frequency=0.05)


def wait_for_text(driver, css: str, text: str):
    """The element once it shows ``text``: a click that submits a form returns before the next page is there."""

    def found(d):
        try:
            for element in d.find_elements(By.CSS_SELECTOR, css):
                if text in element.text:
                    return element
        except WebDriverException as error:  # the old page's elements go while the next page loads: keep looking
            if not chromium.gone(error):
                raise
        return False

    return until(driver).until(found, f"no {css} showing {text!r}")


def console_errors(driver) -> list[str]:
    """Console messages at error level since the last call (CSP violations, failed loads, script errors)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def screenshot(driver, name: str) -> None:
    folder = os.environ.get("WEB_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"web-{name}.png"))


def sign_in(driver, site) -> None:
    driver.get(f"{site.base}/login")
    driver.find_element(By.NAME, "token").send_keys(WEB_TOKEN)
    driver.find_element(By.CSS_SELECTOR, "form.stack button[type=submit]").click()


@pytest.fixture
def signed_in(browser, site) -> None:
    """The browser signed in (the page's sign-in link), on the Memory page: each step signs in itself, so it runs
    whichever steps ran before it in this process (``-n`` without ``--dist loadfile`` hands the module's tests to
    several workers, each with a browser and a site of its own)."""
    browser.get(f"{site.base}/memory?token={WEB_TOKEN}")
    until(browser).until(lambda d: d.current_url == f"{site.base}/memory")
    wait_for_text(browser, "h1", "Memory")


def test_1_sign_in(browser, site):
    browser.get(f"{site.base}/login")
    browser.delete_all_cookies()  # signed out, whatever ran before in this browser
    browser.get(f"{site.base}/memory")
    assert "401" in browser.find_element(By.TAG_NAME, "h1").text
    console_errors(browser)  # the 401 itself is logged as a failed load; what follows must be clean
    browser.get(f"{site.base}/login")
    screenshot(browser, "login")
    sign_in(browser, site)
    # The click returns before the redirect has loaded (seen on a loaded machine): wait for it.
    until(browser).until(lambda d: d.current_url == f"{site.base}/memory")
    assert wait_for_text(browser, "h1", "Memory").text == "Memory"
    cookies = {c["name"]: c for c in browser.get_cookies()}
    assert cookies["assistant_web"]["httpOnly"] and cookies["assistant_web"]["sameSite"] == "Strict"
    assert console_errors(browser) == []


@pytest.mark.usefixtures("signed_in")
def test_2_search_memory_and_open_a_hit(browser, site):
    box = until(browser).until(lambda d: d.find_element(By.NAME, "q"))
    box.clear()
    box.send_keys("bicycle")
    browser.find_element(By.CSS_SELECTOR, "form.search button").click()
    wait_for_text(browser, "h2", "for “bicycle”")
    hits = browser.find_elements(By.CSS_SELECTOR, "li.hit")
    assert len(hits) >= 3
    screenshot(browser, "memory")
    note = next(h for h in hits if "notes/shopping.md" in h.text)
    note.find_element(By.CSS_SELECTOR, "a.where").click()
    wait_for_text(browser, "h1", "notes/shopping.md")
    target = browser.find_element(By.CSS_SELECTOR, "tr:target")  # the hit's place in the file
    assert target.get_attribute("id") == "L1"
    assert "blue bicycle" in browser.find_element(By.CSS_SELECTOR, "table.lines").text
    assert console_errors(browser) == []


@pytest.mark.usefixtures("signed_in")
def test_3_edit_a_note_and_see_the_file_change(browser, site):
    browser.get(f"{site.base}/file?path=notes/shopping.md")
    browser.find_element(By.LINK_TEXT, "Edit").click()
    area = until(browser).until(lambda d: d.find_element(By.NAME, "content"))
    area.clear()
    area.send_keys("# Shopping\n\nBuy pistachio ice cream.")
    screenshot(browser, "edit")
    browser.find_element(By.XPATH, "//button[text()='Save']").click()
    wait_for_text(browser, "table.lines", "pistachio")
    assert site.workspace.read_text("notes/shopping.md") == "# Shopping\n\nBuy pistachio ice cream.\n"
    assert site.workspace.read_jsonl("state/audit.jsonl")[-1]["args"]["path"] == "notes/shopping.md"
    assert console_errors(browser) == []


@pytest.mark.usefixtures("signed_in")
def test_4_open_a_trace_and_see_its_section_sizes(browser, site):
    browser.get(f"{site.base}/traces")
    screenshot(browser, "traces")
    browser.find_element(By.CSS_SELECTOR, "table.traces a").click()
    wait_for_text(browser, "h1", site.trace_id)
    labels = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "svg.hbar text.label")]
    assert labels == ["base", "tools", "profile", "history", "recall"]
    bars = {
        lab: float(rect.get_attribute("width"))
        for lab, rect in zip(labels, browser.find_elements(By.CSS_SELECTOR, "svg.hbar rect.bar"), strict=False)
    }
    assert bars["tools"] > bars["base"] > bars["profile"]
    chart = browser.find_element(By.CSS_SELECTOR, "svg.hbar")
    assert chart.size["width"] > 300 and chart.size["height"] > 50  # drawn, not collapsed
    assert API_KEY not in browser.page_source
    screenshot(browser, "trace")
    assert console_errors(browser) == []


@pytest.mark.usefixtures("signed_in")
def test_5_run_a_collector(browser, site):
    browser.get(f"{site.base}/collectors")
    browser.find_element(By.CSS_SELECTOR, "#c-writer button").click()
    wait_for_text(browser, ".flash", "writer: ok")
    assert "ok" in browser.find_element(By.CSS_SELECTOR, "#c-writer .outcome").text
    assert site.workspace.exists("collectors/writer/latest.md")
    browser.find_element(By.CSS_SELECTOR, "#c-raiser button").click()
    wait_for_text(browser, ".flash", "raiser: error")
    assert "refused the login" in browser.find_element(By.CSS_SELECTOR, "#c-raiser").text
    screenshot(browser, "collectors")
    assert console_errors(browser) == []


@pytest.mark.usefixtures("signed_in")
def test_5b_pause_resume_run_now_and_delete_a_job(browser, site):
    browser.get(f"{site.base}/jobs")
    card = wait_for_text(browser, "#j-j1", "Bins out")
    assert "next run" in card.text and "paused" not in card.text
    screenshot(browser, "jobs")
    button = "#j-j1 form[action='/jobs/j1/{}'] button"
    browser.find_element(By.CSS_SELECTOR, button.format("pause")).click()
    wait_for_text(browser, ".flash", "j1 bins: paused")
    assert browser.find_element(By.CSS_SELECTOR, button.format("resume")).text == "Resume"
    assert '"paused": true' in site.workspace.read_text("jobs/jobs.json")
    browser.find_element(By.CSS_SELECTOR, button.format("resume")).click()
    wait_for_text(browser, ".flash", "j1 bins: resumed")
    browser.find_element(By.CSS_SELECTOR, button.format("run")).click()
    wait_for_text(browser, ".flash", "runs at the bot's next look")
    assert '"run_requested"' in site.workspace.read_text("jobs/jobs.json")
    browser.find_element(By.CSS_SELECTOR, button.format("remove")).click()
    wait_for_text(browser, ".flash", "j1 bins: deleted")
    assert "No jobs yet" in browser.find_element(By.CSS_SELECTOR, "p.empty").text
    assert console_errors(browser) == []


@pytest.mark.usefixtures("signed_in")
def test_5c_review_and_install_a_skill_folder(browser, site, tmp_path):
    folder = tmp_path / "notes-helper"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: notes-helper\ndescription: Tidies notes.\n---\nTidy.\n")
    (folder / "scripts" / "tidy.py").write_text("print('tidy')\n")
    browser.get(f"{site.base}/skills/install")
    browser.find_element(By.NAME, "source").send_keys(str(folder))
    browser.find_element(By.CSS_SELECTOR, "form.install button[type=submit]").click()
    review = wait_for_text(browser, "main", "Review: notes-helper")
    assert "scripts/tidy.py" in review.text and "exec (run_script runs its scripts" in review.text
    assert not (site.root / ".agents" / "skills" / "notes-helper").exists()
    screenshot(browser, "skill-review")
    browser.find_element(By.CSS_SELECTOR, "form[action='/skills/install/confirm'] button").click()
    wait_for_text(browser, ".flash", "Installed notes-helper")
    assert (site.root / ".agents" / "skills" / "notes-helper" / "scripts" / "tidy.py").is_file()
    browser.find_element(By.CSS_SELECTOR, "#i-notes-helper form[action$='/remove'] button").click()
    wait_for_text(browser, ".flash", "Removed notes-helper")
    assert not (site.root / ".agents" / "skills" / "notes-helper").exists()
    assert console_errors(browser) == []


PAGES = [
    "/skills/install",
    "/jobs",
    "/reminders",
    "/memory",
    "/memory/facts",
    "/memory/notes",
    "/file?path=tasks/tasks.json",
    "/conversations",
    "/traces",
    "/collectors",
    "/usage",
    "/skills",
]


@pytest.mark.usefixtures("signed_in")
def test_6_no_console_errors_and_no_sideways_scrolling_at_phone_width(browser, site):
    pages = PAGES + [f"/conversations/{site.chat}/{site.day}", f"/traces/{site.trace_id}"]
    browser.set_window_size(1100, 900)
    for path in pages:
        browser.get(site.base + path)
        assert browser.find_element(By.TAG_NAME, "h1").text, path
        assert console_errors(browser) == [], path
    browser.get(f"{site.base}/memory/facts")
    screenshot(browser, "facts")
    browser.get(f"{site.base}/conversations/{site.chat}/{site.day}")
    browser.find_element(By.CSS_SELECTOR, "details.why summary").click()
    assert "facts/facts.json" in browser.find_element(By.CSS_SELECTOR, "details.why").text
    screenshot(browser, "conversation")
    browser.get(f"{site.base}/usage")
    screenshot(browser, "usage")
    browser.get(f"{site.base}/skills")
    browser.find_element(By.CSS_SELECTOR, "#s-notes summary").click()
    assert '"action"' in browser.find_element(By.CSS_SELECTOR, "#s-notes pre").text  # its argument schema
    screenshot(browser, "skills")
    browser.set_window_size(390, 844)
    for path in pages:
        browser.get(site.base + path)
        overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, (path, overflow)
    browser.get(f"{site.base}/memory?q=bicycle")
    screenshot(browser, "phone")
    assert console_errors(browser) == []


# -- another site in the same browser (issues 26.3, 26.4) ---------------------------------------


@pytest.fixture
def other_site():
    """Pages of another server on 127.0.0.1 (another port): what any site the owner visits can do."""
    with StaticHTTPServer() as server:
        yield server


def test_7_a_form_from_another_port_with_a_planted_cookie_changes_nothing(browser, site, other_site):
    """The owner, signed in, opens a page on another port of 127.0.0.1: it sets ``_xsrf`` (cookies ignore
    ports) and submits a form to the page (same-site, so the session cookie goes along)."""
    browser.get(f"{site.base}/memory?token={WEB_TOKEN}")
    until(browser).until(lambda d: d.current_url == f"{site.base}/memory")
    browser.delete_cookie("_xsrf")  # as after a browser restart: the session cookie lasts, this one does not
    planted = "planted-by-another-port-0123456789"
    for name, action, fields in [
        ("note", "/memory/notes/new", {"title": "PWNED by another port"}),
        ("fact", "/memory/facts/set", {"subject": "owner", "attribute": "city", "value": "PWNED"}),
    ]:
        inputs = "".join(f'<input name="{k}" value="{v}">' for k, v in {**fields, "_xsrf": planted}.items())
        other_site.add(
            f"/{name}",
            f'<script>document.cookie = "_xsrf={planted}; path=/";</script>'
            f'<form id="f" method="post" action="{site.base}{action}">{inputs}</form>'
            '<script>document.getElementById("f").submit();</script>',
            content_type="text/html",
        )
        browser.get(other_site.url(f"/{name}"))
        until(browser).until(lambda d: d.current_url.startswith(site.base))
        assert "403" in wait_for_text(browser, "h1", "403").text
    assert not site.workspace.exists("notes/pwned-by-another-port.md")
    assert "PWNED" not in site.workspace.read_text("facts/facts.json")
    browser.get(f"{site.base}/memory")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Memory"  # still signed in
    console_errors(browser)


def test_8_another_site_making_the_browser_send_wrong_tokens_does_not_lock_the_owner_out(browser, site, other_site):
    images = "".join(f'<img src="{site.base}/memory?token=wrong-{n:03d}-xxxxxxxxxx" alt="">' for n in range(40))
    other_site.add("/images", f"<p>cat pictures</p>{images}", content_type="text/html")
    browser.get(other_site.url("/images"))
    until(browser).until(lambda d: d.execute_script("return document.readyState") == "complete")
    browser.get(f"{site.base}/memory")
    browser.delete_all_cookies()  # signed out: the owner opens the sign-in link again
    browser.get(f"{site.base}/memory?token={WEB_TOKEN}")
    until(browser).until(lambda d: d.current_url == f"{site.base}/memory")
    assert wait_for_text(browser, "h1", "Memory").text == "Memory"
    console_errors(browser)


def test_9_the_sign_in_link_never_leads_off_the_page(browser, site, other_site):
    """The sign-in link drops its token by a redirect to the same address; an address whose path starts with
    ``//`` (or ``/\\``, which the browser reads alike) made that redirect ``//host/...``: another site."""
    other_site.add("/landing", "<h1>another site</h1>", content_type="text/html")
    elsewhere = other_site.url("/landing").removeprefix("http:")
    for path in (elsewhere, elsewhere.replace("//", "/\\", 1)):
        browser.get(f"{site.base}/{path}?token={WEB_TOKEN}")
        until(browser).until(lambda d: d.execute_script("return document.readyState") == "complete")
        assert browser.current_url.startswith(f"{site.base}/"), browser.current_url
        assert wait_for_text(browser, "h1", "404").text.startswith("404")  # signed in, on this page's 404
    assert not other_site.requests_to("/landing")
    console_errors(browser)
