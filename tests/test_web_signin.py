"""Signing in and forms over real HTTP: form tokens bound to the session (issue 26.4) and a sign-in
throttle that an attacker cannot turn against the owner (issue 26.3)."""

from __future__ import annotations

import http.server
import re
import threading

import pytest
import requests

from tests.web_site import WEB_TOKEN, start_site

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


class _OtherPort(http.server.BaseHTTPRequestHandler):
    """Another server on the same host: any page it serves can set cookies the web page then receives."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Set-Cookie", f"_xsrf={PLANTED}; Path=/")
        self.send_header("Set-Cookie", f"assistant_web_login={PLANTED}; Path=/")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OtherPort)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


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
