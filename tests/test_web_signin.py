"""Signing in and forms over real HTTP: form tokens bound to the session (issue 26.4) and a sign-in
throttle that an attacker cannot turn against the owner (issue 26.3)."""

from __future__ import annotations

import http.client
import json
import logging
import re

import pytest
import requests

from tests import preload
from tests.fakes.feed_server import StaticHTTPServer
from tests.web_site import WEB_TOKEN, start_site, write_config

BEARER = {"Authorization": f"Bearer {WEB_TOKEN}"}
PLANTED = "planted-from-another-port-0123456789abcdef"


@pytest.fixture
def site(tmp_path):
    site = start_site(tmp_path)
    yield site
    site.close()


def signed_in(site) -> requests.Session:
    """A browser-like session signed in through the ?token= link."""
    session = requests.Session()
    assert session.get(f"{site.base}/memory?token={WEB_TOKEN}", allow_redirects=False).status_code == 302
    return session


def form_token(session: requests.Session, site, path: str = "/memory") -> str:
    page = session.get(f"{site.base}{path}").text
    return re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)


@pytest.fixture
def other_port():
    """Another server on the same host: any page it serves can set cookies the web page then receives."""
    with StaticHTTPServer() as server:
        cookies = (("Set-Cookie", f"_xsrf={PLANTED}; Path=/"), ("Set-Cookie", f"assistant_web_login={PLANTED}; Path=/"))
        server.add("/", "<p>a page on another port</p>", content_type="text/html", headers=cookies)
        yield server.url("/")


#: Every form of the page, with what it would change.
FORMS = [
    ("/memory/notes/new", {"title": "PWNED note"}),
    ("/memory/facts/set", {"subject": "owner", "attribute": "city", "value": "PWNED"}),
    ("/file?path=notes/shopping.md", {"content": "PWNED"}),
    ("/file?path=notes/new-one.md", {"content": "PWNED"}),
    ("/file/delete", {"path": "notes/shopping.md"}),
    ("/file/delete", {"path": "facts/facts.json", "id": "f1"}),
    ("/collectors/writer/run", {}),
    ("/logout", {}),
]


def _memory(site) -> dict[str, str]:
    return {rel: site.workspace.read_text(rel) for rel in site.workspace.list("**/*") if rel.split("/")[0] != "memory"}


def test_a_cookie_set_from_another_port_does_not_make_a_form_token(site, other_port):
    """The owner's browser visited a page on another port of 127.0.0.1, which set ``_xsrf`` (cookies
    ignore ports); that page's forms then reach this one same-site, with the owner's session cookie."""
    owner = signed_in(site)
    owner.get(other_port)
    assert owner.cookies.get("_xsrf") == PLANTED  # the planted cookie is sent to the page's port too
    before = _memory(site)
    for path, data in FORMS:
        reply = owner.post(site.base + path, data={**data, "_xsrf": PLANTED}, allow_redirects=False)
        assert reply.status_code == 403, (path, reply.status_code)
        in_address = f"{site.base}{path}{'&' if '?' in path else '?'}_xsrf={PLANTED}"
        assert owner.post(in_address, data=data, allow_redirects=False).status_code == 403, path
    for path, body in [
        ("/api/memory/facts/set", {"subject": "owner", "attribute": "city", "value": "PWNED"}),
        ("/api/file?path=notes/shopping.md", {"content": "PWNED"}),
        ("/api/collectors/writer/run", {}),
    ]:
        reply = owner.post(site.base + path, json=body, headers={"X-Xsrftoken": PLANTED})
        assert reply.status_code == 403, path
    # A text/plain form whose body reads as JSON, the token in the address.
    forged = owner.post(
        f"{site.base}/api/file?path=notes/shopping.md&_xsrf={PLANTED}",
        data='{"content": "PWNED", "x": "="}',
        headers={"Content-Type": "text/plain"},
    )
    assert forged.status_code == 403
    assert _memory(site) == before and not site.workspace.exists("collectors/writer/latest.md")
    assert owner.get(f"{site.base}/memory").status_code == 200  # still signed in: /logout refused too
    # The page's own token for this session works.
    token = form_token(owner, site)
    reply = owner.post(f"{site.base}/memory/notes/new", data={"title": "Mine", "_xsrf": token}, allow_redirects=False)
    assert reply.status_code == 302 and site.workspace.exists("notes/mine.md")


def test_a_form_token_is_good_for_its_own_session_only(site):
    first, second = signed_in(site), signed_in(site)
    token_of_first = form_token(first, site)
    reply = second.post(f"{site.base}/memory/notes/new", data={"title": "Other", "_xsrf": token_of_first})
    assert reply.status_code == 403 and not site.workspace.exists("notes/other.md")
    # After signing out and in again, the old page's token is no good either.
    first.post(f"{site.base}/logout", data={"_xsrf": token_of_first})
    assert first.get(f"{site.base}/memory", allow_redirects=False).status_code == 401
    first.get(f"{site.base}/memory?token={WEB_TOKEN}")
    reply = first.post(f"{site.base}/memory/notes/new", data={"title": "Stale", "_xsrf": token_of_first})
    assert reply.status_code == 403 and not site.workspace.exists("notes/stale.md")
    # The sign-in form's token (before the sign-in) is not a signed-in form's token.
    fresh = requests.Session()
    login_token = form_token(fresh, site, "/login")
    fresh.post(f"{site.base}/login", data={"token": WEB_TOKEN, "_xsrf": login_token})
    reply = fresh.post(f"{site.base}/memory/notes/new", data={"title": "Early", "_xsrf": login_token})
    assert reply.status_code == 403 and not site.workspace.exists("notes/early.md")
    reply = fresh.post(f"{site.base}/memory/notes/new", data={"title": "Late", "_xsrf": form_token(fresh, site)})
    assert reply.status_code == 200 and site.workspace.exists("notes/late.md")


def test_the_sign_in_form_cannot_be_posted_with_a_planted_cookie(site, other_port):
    browser = requests.Session()
    browser.get(other_port)  # planted _xsrf and a forged pre-session cookie
    reply = browser.post(f"{site.base}/login", data={"token": WEB_TOKEN, "_xsrf": PLANTED}, allow_redirects=False)
    assert reply.status_code == 403 and "assistant_web" not in reply.headers.get("Set-Cookie", "")
    reply = browser.post(
        f"{site.base}/login",
        data={"token": WEB_TOKEN, "_xsrf": form_token(browser, site, "/login")},
        allow_redirects=False,
    )
    assert reply.status_code == 302 and browser.get(f"{site.base}/memory").status_code == 200


# -- the sign-in throttle (issue 26.3) ----------------------------------------------------------


def _get(site, path: str, source: str, headers: dict | None = None) -> tuple[int, http.client.HTTPMessage]:
    """A GET from the loopback address ``source`` (127.0.0.N: every one of them is this machine)."""
    conn = http.client.HTTPConnection("127.0.0.1", site.server.port, timeout=10, source_address=(source, 0))
    try:
        conn.request("GET", path, headers=headers or {})
        reply = conn.getresponse()
        reply.read()
        return reply.status, reply.headers
    finally:
        conn.close()


def test_changing_the_source_address_does_not_escape_the_bound_on_wrong_tokens(site, caplog):
    now = [1000.0]
    site.server.state.throttle.clock = lambda: now[0]
    statuses = []
    with caplog.at_level(logging.WARNING, logger="assistant_framework.web.auth"):
        for n in range(2, 42):  # a fresh address for every guess
            statuses.append(
                _get(site, "/api/usage", f"127.0.0.{n}", {"Authorization": f"Bearer guess-{n:04d}-xxxxxxxxxx"})[0]
            )
    assert statuses[:10] == [401] * 10 and set(statuses[10:]) == {429}
    status, headers = _get(site, "/memory?token=guess-9999-xxxxxxxxxx", "127.0.0.99")
    assert status == 429 and 1 <= int(headers["Retry-After"]) <= 60
    # The right token, from any address, by any way, is never refused.
    assert _get(site, "/api/usage", "127.0.0.100", BEARER)[0] == 200
    status, headers = _get(site, f"/memory?token={WEB_TOKEN}", "127.0.0.101")
    assert status == 302 and any(c.startswith("assistant_web=") for c in headers.get_all("Set-Cookie"))
    warnings = [r.getMessage() for r in caplog.records if "wrong tokens refused" in r.getMessage()]
    assert len(warnings) == 1  # said once, not once per guess
    now[0] += 6.5  # the bound refills: one more guess is heard
    assert _get(site, "/api/usage", "127.0.0.200", {"Authorization": "Bearer guess-late-xxxxxxxxxx"})[0] == 401


def test_wrong_tokens_sent_by_another_site_never_lock_the_owner_out(site):
    """Any page the owner visits can make the browser request ``/memory?token=WRONG`` (an image, a link):
    from the owner's own address. Dozens of them, and the owner's link, form and scripts still work."""
    for n in range(60):
        status = requests.get(f"{site.base}/memory?token=wrong-{n:04d}-xxxxxxxxxx", allow_redirects=False).status_code
        assert status in (401, 429)
    link = requests.Session()
    reply = link.get(f"{site.base}/memory?token={WEB_TOKEN}", allow_redirects=False)
    assert reply.status_code == 302 and link.get(f"{site.base}/memory").status_code == 200
    form = requests.Session()
    reply = form.post(
        f"{site.base}/login",
        data={"token": WEB_TOKEN, "_xsrf": form_token(form, site, "/login")},
        allow_redirects=False,
    )
    assert reply.status_code == 302 and form.get(f"{site.base}/memory").status_code == 200
    assert requests.get(f"{site.base}/api/usage", headers=BEARER).status_code == 200
    # A wrong one is still refused, and a signed-in browser never meets the bound.
    assert (
        requests.get(f"{site.base}/api/usage", headers={"Authorization": "Bearer nope-nope-nope-nope"}).status_code
        == 429
    )
    assert signed_in(site).get(f"{site.base}/traces").status_code == 200


def test_the_bound_refills_at_its_rate_and_refused_guesses_do_not_push_it_out():
    from assistant_framework.web.auth import SignInThrottle

    now = [0.0]
    throttle = SignInThrottle(free=3, refill_seconds=10, clock=lambda: now[0])
    assert [throttle.missed() for _ in range(3)] == [0, 0, 0]
    assert throttle.missed() == 10 and throttle.missed() == 10  # refused; the wait does not grow
    now[0] += 10
    assert throttle.missed() == 0 and throttle.missed() == 10
    assert throttle.report() == 3 and throttle.report() is None  # once a minute
    now[0] += 61
    # 61 s refilled it, and no further: a quiet minute banks no credit for a later burst.
    assert [throttle.missed() for _ in range(4)] == [0, 0, 0, 10]
    # One client's bound (here 2) is smaller: another client is still heard until the bound over all.
    now[0] += 100
    throttle.per_client = 2
    assert [throttle.missed("10.0.0.1") for _ in range(3)] == [0, 0, 10]
    assert throttle.missed("10.0.0.2") == 0 and throttle.missed("10.0.0.3") == 10  # all clients: 3


def test_the_throttle_remembers_a_bounded_number_of_clients():
    """The clients' bounds are kept for at most MAX_CLIENTS addresses, the least recently heard forgotten
    first: a flood of addresses cannot grow the process's memory (the bound over all clients still holds)."""
    from assistant_framework.web.auth import MAX_CLIENTS, SignInThrottle

    throttle = SignInThrottle(free=10**6, per_client=2, clock=lambda: 0.0)
    assert [throttle.missed("10.0.0.1") for _ in range(3)] == [0, 0, 6]
    for n in range(MAX_CLIENTS - 1):
        throttle.missed(f"fd00::{n:x}")
    assert throttle.missed("10.0.0.1") == 6  # still remembered: MAX_CLIENTS addresses in all
    for n in range(MAX_CLIENTS):
        throttle.missed(f"fd01::{n:x}")
    assert throttle.missed("10.0.0.1") == 0  # forgotten: heard again


def test_wrong_tokens_on_large_bodies_count_too(site):
    """A body over the unsigned-in limit is judged from its headers: a wrong token there is no way to
    guess past the bound (it counts, then gets 429), and the right one still sends its body."""
    big = {"content": "x" * 40_000}
    statuses = [
        requests.post(
            f"{site.base}/api/file?path=notes/big.md", json=big, headers={"Authorization": f"Bearer guess-{n:04d}-xxxx"}
        ).status_code
        for n in range(14)
    ]
    assert statuses[:5] == [413] * 5 and set(statuses[5:]) == {429}  # this client's bound (5)
    assert (
        requests.get(f"{site.base}/api/usage", headers={"Authorization": "Bearer guess-other-xxxx"}).status_code == 429
    )
    saved = requests.post(f"{site.base}/api/file?path=notes/big.md", json=big, headers=BEARER)
    assert saved.status_code == 200 and site.workspace.exists("notes/big.md")


def _guesses(site, source: str, forwarded: list[str], how: str = "bearer") -> list[int]:
    """A wrong token from ``source`` for each ``X-Forwarded-For`` value; the statuses."""
    statuses = []
    for n, value in enumerate(forwarded):
        headers = {"X-Forwarded-For": value} if value else {}
        if how == "bearer":
            statuses.append(
                _get(site, "/api/usage", source, {**headers, "Authorization": f"Bearer guess-{n:04d}-xx"})[0]
            )
        else:
            statuses.append(_get(site, f"/memory?token=guess-{n:04d}-xxxxxxxxxx", source, headers)[0])
    return statuses


def test_rotating_x_forwarded_for_does_not_escape_a_clients_bound(site):
    """Eight wrong tokens in a row from one address, each with another ``X-Forwarded-For``: the header is
    not believed from a peer that is no configured proxy, so they all count against that address's bound
    (5): the rest are refused (429), by header and by link alike, while the right token still works."""
    site.server.state.throttle.free = 1000  # the bound over all clients out of the way: this is the client's
    rotated = [f"203.0.113.{n}" for n in range(1, 9)]
    assert _guesses(site, "127.0.0.1", rotated) == [401] * 5 + [429] * 3
    assert _guesses(site, "127.0.0.2", rotated, how="link") == [401] * 5 + [429] * 3
    status, headers = _get(site, "/api/usage", "127.0.0.1", {"X-Forwarded-For": "198.51.100.1", **BEARER})
    assert status == 200
    # Another address is another client (the bound over all clients still holds them together).
    assert _guesses(site, "127.0.0.3", ["203.0.113.1"]) == [401]


def test_a_configured_proxys_forwarded_address_is_used(tmp_path):
    """Behind a proxy named in ``web.trusted_proxies`` each client forwarded is bounded on its own (the
    right-most address not itself a proxy: what the client wrote to the left of it proves nothing); a peer
    that is no proxy is its own client whatever it forwards."""
    site = start_site(tmp_path, web={"trusted_proxies": ["127.0.0.1/32", "10.9.8.7"]})
    try:
        site.server.state.throttle.free = 1000
        a, b = "203.0.113.7", "203.0.113.8"
        assert _guesses(site, "127.0.0.1", [a] * 5) == [401] * 5
        assert _guesses(site, "127.0.0.1", [a, f"{b}, {a}", f"{b}, {a}, 10.9.8.7"]) == [429] * 3
        assert _guesses(site, "127.0.0.1", [b, f"{a}, {b}"]) == [401] * 2  # b: another client
        assert _guesses(site, "127.0.0.1", ["", "not-an-address", "", "", "", ""]) == [401] * 5 + [429]
        # A peer that is no proxy: its forwarded address is not believed (a is refused, b is not asked about).
        assert _guesses(site, "127.0.0.5", [b] * 5) == [401] * 5
        assert _guesses(site, "127.0.0.5", ["198.51.100.9"]) == [429]
    finally:
        site.close()


def test_trusted_proxies_that_are_not_addresses_are_a_config_error(tmp_path):
    import sys

    config = tmp_path / "config"
    start_site(tmp_path / "first").close()
    write_config(config, tmp_path / "plugins", web={"trusted_proxies": ["10.0.0.0/8", "my-proxy"]})
    result = preload.run(
        [
            sys.executable,
            "-m",
            "messaging_llm_bot.cli",
            "web",
            "--config",
            str(config),
            "--workspace",
            str(tmp_path / "first" / "ws"),
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "web.json" in result.stderr and "trusted_proxies" in result.stderr and "my-proxy" in result.stderr
    assert "Traceback" not in result.stderr


def test_signing_out_ends_the_session_for_a_copy_of_its_cookie_too(site):
    """A copied session cookie (another browser, a stolen cookie) stops counting once its browser signs out:
    the page keeps the signed-in sessions, the cookie alone is not enough."""
    owner = signed_in(site)
    copy = requests.Session()
    copy.cookies.update(owner.cookies)
    assert copy.get(f"{site.base}/memory", allow_redirects=False).status_code == 200
    # While signed in, the session may send a body over the anonymous bound (a 100 kB note is saved).
    note = {"content": "# Long\n\n" + "many words " * 10_000}
    saved = owner.post(
        f"{site.base}/api/file?path=notes/long.md", json=note, headers={"X-Xsrftoken": form_token(owner, site)}
    )
    assert saved.status_code == 200 and site.workspace.exists("notes/long.md")
    owner.post(f"{site.base}/logout", data={"_xsrf": form_token(owner, site)})
    assert copy.get(f"{site.base}/memory", allow_redirects=False).status_code == 401
    assert copy.get(f"{site.base}/api/facts").status_code == 401
    # At the header screen too: a body over the anonymous bound with the copied cookie is refused there, from
    # its headers, as a request without a session (413 before a byte is read; 401 would mean the screen counted
    # the revoked session as signed in and let the body through to the handler).
    for path in ("/api/file?path=notes/x.md", "/memory/notes/new"):
        big = copy.post(f"{site.base}{path}", data=b"x" * 200_000, headers={"X-Xsrftoken": "x"})
        assert big.status_code == 413 and "without the token" in big.text, (path, big.status_code, big.text[:200])
    assert not site.workspace.exists("notes/x.md")
    # The owner signs in again: a new session, the old cookie stays dead.
    assert signed_in(site).get(f"{site.base}/memory", allow_redirects=False).status_code == 200
    assert copy.get(f"{site.base}/memory", allow_redirects=False).status_code == 401


def test_sessions_are_kept_by_the_workspace_hashed_and_shared_by_its_pages(site, tmp_path):
    """A page started later on the same workspace (the bot's page restarted, or `assistant web` beside it)
    knows the session; a sign-out at one page ends it at the other; the file holds no usable id."""
    import tornado.web

    from assistant_framework.web.auth import COOKIE_NAME, cookie_secret
    from assistant_framework.web.parts import standalone_parts
    from assistant_framework.web.server import WebServer
    from assistant_framework.web.sessions import SESSIONS_FILE

    owner = signed_in(site)
    copy = requests.Session()
    copy.cookies.update(owner.cookies)
    sid = tornado.web.decode_signed_value(
        cookie_secret(WEB_TOKEN), COOKIE_NAME, owner.cookies.get(COOKIE_NAME).strip('"')
    ).decode()
    kept = site.workspace.read_text(SESSIONS_FILE)
    assert sid not in kept and len(json.loads(kept)) == 1
    assert oct(site.workspace.path(SESSIONS_FILE).stat().st_mode & 0o777) == "0o600"
    parts = standalone_parts(tmp_path / "config", site.root)
    other = WebServer(parts, host="127.0.0.1", port=0)
    other.start()
    try:
        other_base = other.url.rstrip("/")
        assert copy.get(f"{other_base}/memory", allow_redirects=False).status_code == 200
        owner.post(f"{site.base}/logout", data={"_xsrf": form_token(owner, site)})
        assert copy.get(f"{other_base}/memory", allow_redirects=False).status_code == 401
    finally:
        other.stop()
        parts.close()
