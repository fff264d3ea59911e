"""Two more ways around the SSRF guard, driven through the bot (issue 34.8, 34.9).

- *A mixed DNS answer*: one lookup answering a public address and a loopback one. Every address
  of the answer is checked, so the fetch is refused and the internal server sees no request,
  whichever order the addresses come in (and for an IPv4-mapped IPv6 form of loopback).
- *Proxies from the environment*: with ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` (either case)
  pointing at a local server, the guarded fetch still goes to the checked, pinned address and
  the proxy sees no connection: a proxy would resolve the name again, unchecked.

The model client and the fake Telegram API are on 127.0.0.1, which ``NO_PROXY`` exempts; the
fetched names are made up and answered by the test resolver (the ``dns`` fixture).
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assistant_framework.skills import SkillContext, SkillManager
from tests.telegram_harness import OWNER, texts  # noqa: F401

#: A global address (TEST-NET ranges count as internal, so a real public one is needed). Never
#: connected to while the guard works: the answer that holds it also holds loopback.
PUBLIC = "93.184.215.14"
PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


class _Page(BaseHTTPRequestHandler):
    """The internal server: records every request it gets and answers a small page."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.server.seen.append((self.path, self.headers.get("Host")))
        body = b"<html><body><p>internal admin page</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def _serve_page(host: str = "127.0.0.1") -> ThreadingHTTPServer:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("Server", (ThreadingHTTPServer,), {"address_family": family})
    server = server_class((host, 0), _Page)
    server.seen = []
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


class _Proxy:
    """A proxy-like listener on 127.0.0.1 that records every connection (and the first bytes) and closes it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.connections: list[bytes] = []
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.connections.append(conn.recv(4096))
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    self.connections.append(b"")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def page():
    server = _serve_page()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(monkeypatch):
    """A recording proxy named by every proxy variable; 127.0.0.1 and localhost are exempt (NO_PROXY)."""
    recorder = _Proxy()
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, recorder.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    yield recorder
    recorder.close()


def _web_call(url: str) -> str:
    return json.dumps({"skill": "web", "args": {"url": url}})


def _allow_network(private: bool):
    def patch(config: dict) -> None:
        config["policy"] = {"capabilities": {"network": "allow"}, "allow_private_network": private}

    return patch


def _skill_result_seen_by_model(chat_server) -> str:
    """The text of the message that fed the web skill's result back to the model."""
    return str(chat_server.chat_requests[1]["messages"][-1]["content"])


# -- 34.8: one DNS answer, public and internal ------------------------------------------------


@pytest.mark.parametrize("order", ["public first", "loopback first"])
def test_a_mixed_dns_answer_is_refused_through_the_bot(fake, start_bot, chat_server, dns, page, order):
    port = page.server_address[1]
    answer = [PUBLIC, "127.0.0.1"] if order == "public first" else ["127.0.0.1", PUBLIC]
    resolver = dns({"mixed.test": [answer]})
    start_bot(config_patch=_allow_network(private=False))
    chat_server.enqueue(_web_call(f"http://mixed.test:{port}/admin"), '{"reply": "could not read it"}')
    fake.send_message("read http://mixed.test/admin for me")
    fake.wait_for(lambda: [t for t in texts(fake) if "could not read it" in t], timeout=15)
    fed_back = _skill_result_seen_by_model(chat_server)
    assert "internal address (127.0.0.1)" in fed_back, fed_back
    assert page.seen == [] and resolver.calls == ["mixed.test"]


@pytest.mark.parametrize("internal", ["::ffff:127.0.0.1", "127.0.0.1"])
def test_a_mixed_answer_is_refused_for_each_internal_form(workspace, dns, page, internal):
    """The neighbouring case: loopback written as an IPv4-mapped IPv6 address, second in the answer
    (and, were only the first address checked, the one connected to after the public one)."""
    port = page.server_address[1]
    dns({"mapped.test": [[PUBLIC, internal, "93.184.216.34"]]})
    skills = SkillManager.from_config({}, workspace)
    context = SkillContext(config={"policy": {"allow_private_network": False}})
    result = skills.run("web", {"url": f"http://mapped.test:{port}/admin"}, context)
    assert not result.ok and "internal address" in result.error, result
    assert page.seen == []


# -- 34.9: proxies from the environment -------------------------------------------------------


def test_the_guarded_fetch_ignores_proxy_variables_through_the_bot(fake, start_bot, chat_server, dns, page, proxy):
    port = page.server_address[1]
    dns({"intranet.test": ["127.0.0.1"]})
    start_bot(config_patch=_allow_network(private=True))
    chat_server.enqueue(_web_call(f"http://intranet.test:{port}/status"), '{"reply": "read it"}')
    fake.send_message("what does the intranet status page say?")
    fake.wait_for(lambda: [t for t in texts(fake) if "read it" in t], timeout=15)
    assert "internal admin page" in _skill_result_seen_by_model(chat_server)
    assert page.seen == [("/status", f"intranet.test:{port}")]  # the checked, pinned address
    assert proxy.connections == []


@pytest.mark.parametrize("variable", ["http_proxy", "ALL_PROXY", "HTTPS_PROXY"])
def test_each_proxy_variable_alone_is_ignored(workspace, dns, page, monkeypatch, variable):
    """One variable at a time (requests reads ALL_PROXY when the scheme's own is unset); for
    HTTPS_PROXY the fetched URL is https, and the proxy must not even see the CONNECT."""
    recorder = _Proxy()
    for name in PROXY_VARIABLES + ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, recorder.url)
    port = page.server_address[1]
    dns({"intranet.test": ["127.0.0.1"]})
    scheme = "https" if variable == "HTTPS_PROXY" else "http"
    skills = SkillManager.from_config({}, workspace)
    context = SkillContext(config={"policy": {"allow_private_network": True}})
    try:
        result = skills.run("web", {"url": f"{scheme}://intranet.test:{port}/status"}, context)
    finally:
        recorder.close()
    assert recorder.connections == []
    if scheme == "http":
        assert result.ok and "internal admin page" in result.value["text"], result
        assert page.seen == [("/status", f"intranet.test:{port}")]
    else:  # the plain-HTTP page server cannot speak TLS: the fetch fails, but not through the proxy
        assert not result.ok
