"""The web skill: fetches text pages, refuses internal addresses unless allowed, marks the turn untrusted."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assistant_framework.skills import SkillContext, SkillManager
from messaging_llm_bot.agent.incoming import AgentMessage
from tests.fakes.dns import loopback_usable

PAGES = {
    "/page": (
        "text/html; charset=utf-8",
        "<html><head><title>T</title><script>x()</script></head>"
        "<body><h1>Recipe</h1><p>Bake 40 minutes.</p></body></html>",
    ),
    "/plain": ("text/plain", "just text"),
    "/image": ("image/png", "\x89PNG"),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server API
        if self.path == "/hop":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.end_headers()
            return
        kind, body = PAGES.get(self.path, ("text/plain", "missing"))
        data = body.encode("latin-1" if kind == "image/png" else "utf-8")
        self.send_response(200 if self.path in PAGES else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


def _serve_in_a_thread(server: ThreadingHTTPServer) -> None:
    """``server.shutdown()`` returns at the loop's next look: every 0.05 s, not the default 0.5 s (which each
    test that stops a server waited out)."""
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    _serve_in_a_thread(server)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run(workspace, args, allow_private):
    skills = SkillManager.from_config({}, workspace)
    context = SkillContext(config={"policy": {"allow_private_network": allow_private}})
    return skills.run("web", args, context)


def test_internal_address_refused_by_default(workspace, site):
    result = run(workspace, {"url": f"{site}/page"}, allow_private=False)
    assert not result.ok and "internal address" in result.error and "allow_private_network" in result.error


def test_page_fetched_as_text_when_allowed(workspace, site):
    result = run(workspace, {"url": f"{site}/hop"}, allow_private=True)
    assert result.ok
    assert result.value["url"].endswith("/page")
    assert "Recipe" in result.value["text"] and "Bake 40 minutes." in result.value["text"]
    assert "x()" not in result.value["text"]
    assert run(workspace, {"url": f"{site}/plain"}, allow_private=True).value["text"] == "just text"


def test_non_text_and_errors_are_reported(workspace, site):
    assert "not a text page" in run(workspace, {"url": f"{site}/image"}, allow_private=True).error
    assert "HTTP 404" in run(workspace, {"url": f"{site}/nothing"}, allow_private=True).error
    assert not run(workspace, {"url": "file:///etc/passwd"}, allow_private=True).ok  # schema: http(s) only


def test_a_fetch_marks_the_turn_untrusted(bot_config, workspace, chat_server, site, make_agent):

    config = dict(
        bot_config, policy={"capabilities": {"network": "allow", "delete": "allow"}, "allow_private_network": True}
    )
    workspace.write_text("notes/keep.md", "keep")
    agent = make_agent(config, workspace)
    chat_server.enqueue(
        f'{{"skill": "web", "args": {{"url": "{site}/page"}}}}',
        '{"skill": "file", "args": {"action": "delete", "path": "notes/keep.md"}}',
        '{"reply": "done"}',
    )
    agent.handle(AgentMessage("c1", "read this page"))
    assert workspace.exists("notes/keep.md")  # the page could have asked for that delete
    assert chat_server.chat_requests[1]["messages"][-1]["content"].startswith("[Untrusted content")


# -- issue 14.2: the guard and the HTTP client agree on the host -----------------------------------


class _Recording(_Handler):
    seen: list = []

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        type(self).seen.append((self.server.server_address[0], self.path, self.headers.get("Host")))
        super().do_GET()


def _serve(host: str, port: int = 0) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), _Recording)
    _serve_in_a_thread(server)
    return server


@pytest.mark.parametrize(
    "trick",
    [
        "http://127.0.0.1:{port}\\@8.8.8.8/page",
        "http://127.0.0.1:{port}\\\\@8.8.8.8/page",
        "http://8.8.8.8@127.0.0.1:{port}/page",
        "http://127.0.0.1:{port}/pa ge",
        "http://127.0.0.1:{port}\t@8.8.8.8/page",
        "http://127。0。0。1:{port}/page",
        "http://ｌｏｃａｌｈｏｓｔ:{port}/page",
    ],
)
def test_url_parser_tricks_never_reach_an_internal_server(workspace, trick):
    _Recording.seen = []
    server = _serve("127.0.0.1")
    try:
        result = run(workspace, {"url": trick.format(port=server.server_address[1])}, allow_private=False)
    finally:
        server.shutdown()
        server.server_close()
    assert not result.ok and "Recipe" not in str(result.value)
    assert _Recording.seen == []  # not one request reached the internal server


@pytest.mark.parametrize(
    "host",
    [
        "100.64.0.1",
        "100.127.255.254",
        "[2002:7f00:1::]",
        "[2002:c0a8:101::1]",
        "[64:ff9b::7f00:1]",
        "[64:ff9b::a00:1]",
        "[::ffff:10.0.0.1]",
        "192.0.0.8",
        "198.18.0.1",
        "192.88.99.1",
        "[fc00::1]",
        "[fe80::1]",
        "[ff02::1]",
        "[64:ff9b:1::1]",
        "[2001:db8::1]",
        "240.0.0.1",
        "[2002:c000:9::]",  # 6to4 of 192.0.0.9: special-use (listed), though Python calls it global
    ],
)
def test_special_use_ranges_and_embedded_private_ipv4_are_refused(host):
    from assistant_framework.netguard import BlockedURLError, check_url

    with pytest.raises(BlockedURLError):
        check_url(f"http://{host}/", resolve=False)


@pytest.mark.parametrize(
    "url",
    [
        "http://8.8.8.8#@127.0.0.1/page",  # '@' where another parser reads user info: urllib3 reads no auth here
        "http://8.8.8.8?@127.0.0.1/page",
        "http://x.localhost/page",  # every *.localhost is loopback (RFC 6761), not a name for DNS to answer
        "http://LOCALHOST./page",
    ],
)
def test_user_info_lookalikes_and_localhost_names_are_refused_before_any_lookup(url):
    from assistant_framework.netguard import BlockedURLError, check_url

    with pytest.raises(BlockedURLError):
        check_url(url, resolve=False)


@pytest.mark.parametrize("host", ["8.8.8.8", "[2002:808:808::]", "[64:ff9b::808:808]", "[2606:4700::1111]"])
def test_public_addresses_stay_allowed(host):
    from assistant_framework.netguard import check_url

    assert check_url(f"http://{host}/", resolve=False)


def _fetch(workspace, url: str, *servers: ThreadingHTTPServer, allow_private: bool = True):
    """Run the web skill on ``url``, then stop ``servers``."""
    _Recording.seen = []
    try:
        return run(workspace, {"url": url}, allow_private=allow_private)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def test_host_is_resolved_once_and_the_connection_goes_to_the_checked_address(workspace, dns):
    """A rebinding name (first answer A, then B): the fetch connects to A, the address it checked,
    with the name kept in the Host header; B never sees a request."""
    if not loopback_usable():
        pytest.skip("127.0.0.2 is not usable on this machine")
    first = _serve("127.0.0.1")
    port = first.server_address[1]
    second = _serve("127.0.0.2", port)
    resolver = dns({"rebind.test": ["127.0.0.1", "127.0.0.2"]})
    result = _fetch(workspace, f"http://rebind.test:{port}/page", first, second)
    assert result.ok and "Recipe" in result.value["text"]
    assert _Recording.seen == [("127.0.0.1", "/page", f"rebind.test:{port}")]
    assert resolver.calls == ["rebind.test"]  # the client did not resolve the name a second time


def test_a_checked_address_that_refuses_the_connection_falls_through_to_the_next(workspace, dns):
    """A name with two checked addresses, the first unreachable (like IPv6 on a machine without
    it): the fetch goes to the second, still with the name in the Host header, resolved once."""
    server = _serve("127.0.0.1")
    port = server.server_address[1]
    resolver = dns({"two.test": [["127.0.0.3", "127.0.0.1"]]})
    result = _fetch(workspace, f"http://two.test:{port}/page", server)
    assert result.ok and "Recipe" in result.value["text"], result
    assert _Recording.seen == [("127.0.0.1", "/page", f"two.test:{port}")]
    assert resolver.calls == ["two.test"]


def test_a_name_with_non_ascii_letters_is_fetched_under_its_idna_form(workspace, dns):
    server = _serve("127.0.0.1")
    port = server.server_address[1]
    resolver = dns({"xn--bcher-kva.test": ["127.0.0.1"]})
    result = _fetch(workspace, f"http://bücher.test:{port}/page", server)
    assert result.ok and "Recipe" in result.value["text"], result
    assert resolver.calls == ["xn--bcher-kva.test"]
    assert _Recording.seen == [("127.0.0.1", "/page", f"xn--bcher-kva.test:{port}")]


def test_a_rebinding_name_never_reaches_the_internal_address_it_answers_second(workspace, dns):
    """The check and the connection must not resolve separately: a name answering an address the
    guard lets through first and loopback second must not reach the loopback server."""
    internal = _serve("127.0.0.2") if loopback_usable() else _serve("127.0.0.1")
    address, port = internal.server_address[:2]
    # The old guard let carrier-grade NAT through; a rebinding server answers loopback next.
    resolver = dns({"rebind.test": ["100.64.0.1", address]})
    result = _fetch(workspace, f"http://rebind.test:{port}/page", internal, allow_private=False)
    assert not result.ok and "internal address" in result.error
    assert _Recording.seen == [] and resolver.calls == ["rebind.test"]


def test_the_fallback_tries_a_few_addresses_and_never_resends_a_request(workspace, dns):
    """At most MAX_ADDRESSES_TRIED refused addresses are tried; a server that took the request and
    hung up is an answer (an error), not a reason to send the request to the next address."""
    import socket

    from assistant_framework.netguard import MAX_ADDRESSES_TRIED

    server = _serve("127.0.0.1")
    port = server.server_address[1]
    refused = [f"127.0.0.{n}" for n in range(10, 10 + MAX_ADDRESSES_TRIED)]
    dns({"far.test": [refused + ["127.0.0.1"]], "near.test": [refused[:-1] + ["127.0.0.1"]]})
    far = run(workspace, {"url": f"http://far.test:{port}/page"}, allow_private=True)
    near = _fetch(workspace, f"http://near.test:{port}/page", server)
    assert not far.ok and near.ok and "Recipe" in near.value["text"]

    hangup = socket.socket()
    hangup.bind(("127.0.0.1", 0))
    hangup.listen()
    taken: list[bytes] = []

    def take_and_hang_up() -> None:
        conn, _ = hangup.accept()
        taken.append(conn.recv(65536))
        conn.close()

    threading.Thread(target=take_and_hang_up, daemon=True).start()
    second = _serve("127.0.0.2", hangup.getsockname()[1]) if loopback_usable() else None
    dns({"hangup.test": [["127.0.0.1", "127.0.0.2"]]})
    try:
        result = _fetch(workspace, f"http://hangup.test:{hangup.getsockname()[1]}/page", *([second] if second else []))
    finally:
        hangup.close()
    assert not result.ok and taken and taken[0].startswith(b"GET /page")
    assert _Recording.seen == []  # not sent again to the second address
