"""The web skill on pages shaped like the real web, served by a real local HTTP server:
charsets declared only in the page, legacy encodings, tables, optional tags, slow servers."""

from __future__ import annotations

import time

import pytest

from assistant_framework.skills import SkillContext, SkillManager
from tests.fakes.feed_server import StaticHTTPServer


@pytest.fixture
def site():
    with StaticHTTPServer() as server:
        yield server


def fetch(workspace, url: str, **args):
    skills = SkillManager.from_config({}, workspace)
    context = SkillContext(config={"policy": {"allow_private_network": True}})
    return skills.run("web", {"url": url, **args}, context)


@pytest.mark.parametrize(
    "body, encoding, expected",
    [
        # The commonest case: the server sends no charset, the page says UTF-8 in a <meta>.
        (
            "<html><head><meta charset='utf-8'><title>T</title></head><body><p>Grüße aus Köln, 日本</p></body></html>",
            "utf-8",
            "Grüße aus Köln, 日本",
        ),
        (
            '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1251"></head>'
            "<body><p>Привет, мир</p></body></html>",
            "cp1251",
            "Привет, мир",
        ),
        (
            "<html><head><meta charset=shift_jis></head><body><p>こんにちは世界</p></body></html>",
            "shift_jis",
            "こんにちは世界",
        ),
        # No declaration at all: UTF-8 (what nearly every undeclared page is today).
        ("<html><body><p>Grüße — „Zitat“</p></body></html>", "utf-8", "Grüße — „Zitat“"),
        # A byte order mark wins (an editor's "UTF-8 with BOM"): no stray ï»¿ in the text.
        ("\ufeff<html><body><p>Grüße</p></body></html>", "utf-8", "Grüße"),
    ],
)
def test_html_without_a_charset_header_is_decoded_as_the_page_declares(workspace, site, body, encoding, expected):
    site.add("/page", body.encode(encoding), content_type="text/html")
    result = fetch(workspace, site.url("/page"))
    assert result.ok, result.error
    assert result.value["text"] == expected


def test_plain_text_without_a_charset_is_read_as_utf8(workspace, site):
    site.add("/notes.txt", "Grüße, 日本".encode("utf-8"), content_type="text/plain")
    result = fetch(workspace, site.url("/notes.txt"))
    assert result.ok and result.value["text"] == "Grüße, 日本"


def test_the_charset_header_still_wins_over_the_page(workspace, site):
    page = "<html><head><meta charset='utf-8'></head><body>Привет</body></html>".encode("koi8-r")
    site.add("/page", page, content_type="text/html; charset=koi8-r")
    assert fetch(workspace, site.url("/page")).value["text"] == "Привет"


@pytest.mark.parametrize(
    "content_type, page",
    [
        ("text/html; charset=utf8mb4", "<html><body><p>Grüße</p></body></html>"),  # a database's name, not a charset
        ("text/html", "<html><head><meta charset='none'></head><body><p>Grüße</p></body></html>"),
    ],
    ids=["header-utf8mb4", "meta-none"],
)
def test_an_unknown_charset_label_falls_back_instead_of_failing(workspace, site, content_type, page):
    site.add("/page", page.encode("utf-8"), content_type=content_type)
    result = fetch(workspace, site.url("/page"))
    assert result.ok, result.error
    assert result.value["text"] == "Grüße"


def test_table_cells_stay_apart(workspace, site):
    """Timetables, prices, specs: each row one line, its cells separated (not "NamePrice")."""
    site.add(
        "/prices",
        "<html><body><table><thead><tr><th>Item</th><th>Price</th></tr></thead>"
        "<tbody><tr><td>Apple</td><td>1.20</td></tr>\n<tr><td><b>Pear</b></td><td>0.90</td></tr></tbody>"
        "</table></body></html>",
        content_type="text/html; charset=utf-8",
    )
    result = fetch(workspace, site.url("/prices"))
    assert result.ok, result.error
    lines = [line for line in result.value["text"].splitlines() if line]
    assert lines == ["Item | Price", "Apple | 1.20", "Pear | 0.90"]


def test_empty_layout_cells_add_no_separators(workspace, site):
    site.add(
        "/news",
        "<table><tr><td>&nbsp;</td><td><p>Our <a href='https://shop.example/sale'>sale</a> starts today</p></td>"
        "<td width=20></td></tr></table>",
        content_type="text/html; charset=utf-8",
    )
    result = fetch(workspace, site.url("/news"))
    assert result.ok and result.value["text"] == "Our sale <https://shop.example/sale> starts today"


@pytest.mark.parametrize(
    "page",
    [
        # HTML5 lets a page leave out </head> and <body> (html-minifier's removeOptionalTags does).
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>T</title><link rel=stylesheet href=a.css>"
        "<p>Visible text here",
        "<!doctype html><head><meta charset=utf-8><title>T</title><style>p{color:red}</style><body><p>Visible text "
        "here</body>",
    ],
    ids=["no-head-end-no-body", "no-head-end"],
)
def test_a_page_without_its_optional_head_end_tag_is_not_empty(workspace, site, page):
    site.add("/min", page, content_type="text/html; charset=utf-8")
    result = fetch(workspace, site.url("/min"))
    assert result.ok and result.value["text"] == "Visible text here"


def test_a_page_that_never_finishes_returns_what_arrived_before_the_skill_times_out(workspace, site):
    """A server dripping a byte at a time never trips a per-read timeout: the skill stops reading
    before its own timeout, answers with what it has, and leaves no thread reading on."""
    import threading
    import time

    site.add(
        "/drip",
        "<html><body><p>" + "Slow news. " * 200 + "</p></body></html>",
        content_type="text/html; charset=utf-8",
        drip=0.02,
    )
    # The skill reads for 80% of its 2 s (1.6 s), then answers with what arrived before its own timeout.
    skills = SkillManager.from_config({"runtime": {"skill_timeouts": {"web": 2}}}, workspace)
    context = SkillContext(
        config={"policy": {"allow_private_network": True}, "runtime": {"skill_timeouts": {"web": 2}}}
    )
    started = time.monotonic()
    result = skills.run("web", {"url": site.url("/drip")}, context)
    assert result.ok, result.error
    assert time.monotonic() - started < 2
    assert result.value["text"].startswith("Slow news. Slow news.")
    assert "still loading" in result.value["text"]
    assert not [t for t in threading.enumerate() if t.name == "skill-web"]


def test_a_long_page_is_cut_by_the_skill_to_what_the_model_is_shown(workspace, site):
    """The skill's own cut (with its "[... N more characters]" note) must fit the manager's result
    limit (runtime.skill_result_limit_chars, 4000 by default): else the model gets a JSON string cut
    in the middle and max_chars above the limit does nothing."""
    site.add(
        "/long",
        "<html><body>" + "".join(f'<p>Paragraph {n}: "quoted" words.</p>' for n in range(800)) + "</body></html>",
        content_type="text/html; charset=utf-8",
    )
    result = fetch(workspace, site.url("/long"))
    assert result.ok and not result.truncated, result
    assert result.value["text"].startswith("Paragraph 0:") and result.value["text"].endswith("more characters]")

    skills = SkillManager.from_config({"runtime": {"skill_result_limit_chars": 20000}}, workspace)
    context = SkillContext(
        config={"policy": {"allow_private_network": True}, "runtime": {"skill_result_limit_chars": 20000}}
    )
    roomy = skills.run("web", {"url": site.url("/long"), "max_chars": 12000}, context)
    assert roomy.ok and not roomy.truncated
    assert len(roomy.value["text"].rsplit("\n[...", 1)[0]) == 12000


@pytest.mark.parametrize("kind", ["application/rss+xml", "application/xml", "text/xml"])
def test_a_feed_link_reads_as_its_entries(workspace, site, kind):
    from pathlib import Path

    feed = (Path(__file__).parent / "fixtures" / "collectors" / "news_rss2.xml").read_bytes()
    site.add("/news.xml", feed, content_type=kind)
    result = fetch(workspace, site.url("/news.xml"))
    assert result.ok, result.error
    text = result.value["text"]
    assert text.startswith("Town News\n\n- Bridge reopens after repairs")
    assert "The old bridge is open again." in text and "<p>" not in text  # the CDATA summary, as text
    site.add(
        "/sitemap.xml", b"<urlset><url><loc>https://example.org/a</loc></url></urlset>", content_type="application/xml"
    )
    assert (
        "<loc>https://example.org/a</loc>" in fetch(workspace, site.url("/sitemap.xml")).value["text"]
    )  # not a feed: as is


@pytest.mark.parametrize(
    "rest",
    ["<a" * 100_000, "<!--x>" * 60_000, "</a" * 100_000],
    ids=["a-start-tag-never-finished", "comments-never-closed", "end-tags-never-finished"],
)
def test_a_page_whose_last_tag_never_ends_is_read_at_once(workspace, site, rest):
    """After the text, a tag, comment or end tag that is never finished, repeated: it shows nothing and the page is
    read at once (Python 3.11's parser read such a rest in time quadratic in it: 200 KB took a minute of CPU, the
    skill's thread running on after its timeout; fixed in Python 3.12.11 and 3.13.4, not in 3.11)."""
    site.add("/page", f"<p>The heron nests by the lake.</p>{rest}".encode(), content_type="text/html")
    started = time.monotonic()
    result = fetch(workspace, site.url("/page"))
    assert result.ok, result.error
    assert result.value["text"] == "The heron nests by the lake."
    assert time.monotonic() - started < 5
