"""The https half of the DNS-rebinding defence, against a real local TLS server.

``GuardedSession`` resolves a URL's host once, checks the addresses and connects to the checked one;
for https the TLS server name (SNI) and the certificate hostname check must stay the URL's host. The
server below listens on loopback and serves certificates, made here with the ``openssl`` command, for
made-up names that only the test resolver knows. Certificates carry no IP address, so a handshake
checked against the address instead of the name fails.
"""

from __future__ import annotations

import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from assistant_framework import netguard
from assistant_framework.netguard import GuardedSession
from tests.certs import make_ca
from tests.fakes.dns import FakeDNS, loopback_usable

PINNED, OTHER, INTRANET = "pinned.example", "other.example", "intranet.example"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A test CA and one certificate (with a DNS SAN, no IP SAN) per made-up name: {name: (cert, key)}."""
    ca = make_ca(tmp_path_factory.mktemp("pki"), "netguard test CA")
    if ca is None:
        pytest.skip("the openssl command is not installed; it makes the test certificates")
    certs = {"ca": str(ca.cert)}
    for name in (PINNED, OTHER, INTRANET):
        cert, key = ca.issue(name, f"DNS:{name}")
        certs[name] = (str(cert), str(key))
    return certs


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server API
        server = self.server
        server.seen.append(
            (server.server_address[0], server.sni[-1] if server.sni else None, self.headers.get("Host"), self.path)
        )
        if self.path == "/hop" and server.location:
            self.send_response(302)
            self.send_header("Location", server.location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = f"served by {server.name}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


class _TLSServer(ThreadingHTTPServer):
    """An https server for one certificate; records the SNI of every handshake and every request."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], cert: tuple[str, str], name: str) -> None:
        super().__init__(address, _Handler)
        self.name, self.location = name, None
        self.sni: list[str | None] = []
        self.seen: list[tuple] = []
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(*cert)
        self.context.sni_callback = lambda _sock, server_name, _context: self.sni.append(server_name)

    def finish_request(self, request, client_address) -> None:  # in the request's own thread
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # the client refused the certificate (or went away) during the handshake
        with tls:  # the server closes ``request``, which the wrap left without its descriptor
            super().finish_request(tls, client_address)

    @property
    def port(self) -> int:
        return self.server_address[1]


@pytest.fixture
def serve(pki):
    """serve(name_of_certificate, host="127.0.0.1", port=0) -> a running _TLSServer, closed after the test."""
    servers = []

    def start(cert_name: str, host: str = "127.0.0.1", port: int = 0) -> _TLSServer:
        server = _TLSServer((host, port), pki[cert_name], f"{host}/{cert_name}")
        # Looking at the stop flag every 50 ms, not 0.5 s: each server's shutdown waits for that look.
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_https_goes_to_the_checked_address_with_the_name_as_sni_host_and_certificate_name(pki, serve, dns):
    """The name answers 127.0.0.1 first and 127.0.0.2 after: the fetch reaches 127.0.0.1 (the
    checked address) with SNI and Host naming the URL's host, and the certificate, which names
    only pinned.example, is accepted, so it was checked against the name and not the address."""
    server = serve(PINNED)
    trap = serve(PINNED, "127.0.0.2", server.port) if loopback_usable() else None
    resolver = dns({PINNED: ["127.0.0.1", "127.0.0.2"]})
    with GuardedSession(allow_private=True, resolver=resolver) as session:
        response = session.get(f"https://{PINNED}:{server.port}/", verify=pki["ca"], timeout=10)
    assert response.status_code == 200 and response.text == "served by 127.0.0.1/pinned.example"
    assert server.sni == [PINNED]
    assert server.seen == [("127.0.0.1", PINNED, f"{PINNED}:{server.port}", "/")]
    assert resolver.calls == [PINNED]
    assert trap is None or (trap.sni == [] and trap.seen == [])
    # The same certificate is refused for the address itself: the fetch above checked the name.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"https://127.0.0.1:{server.port}/", verify=pki["ca"], timeout=10)


def test_https_certificate_for_another_name_at_the_checked_address_is_refused(pki, serve, dns):
    """Connecting by address must not skip the hostname check: a valid certificate (same CA) for
    other.example, served where pinned.example resolves, fails the fetch with a certificate error."""
    server = serve(OTHER)
    resolver = dns({PINNED: ["127.0.0.1"], OTHER: ["127.0.0.1"]})
    with GuardedSession(allow_private=True, resolver=resolver) as session:
        with pytest.raises(requests.exceptions.SSLError) as refused:
            session.get(f"https://{PINNED}:{server.port}/", verify=pki["ca"], timeout=10)
        assert f"'{PINNED}'" in str(refused.value)  # checked against the name (not "not valid for '127.0.0.1'")
        assert server.seen == []  # no request was sent over the unverified connection
        # The same server is fine for the name its certificate carries: the refusal was the name.
        response = session.get(f"https://{OTHER}:{server.port}/", verify=pki["ca"], timeout=10)
    assert response.status_code == 200
    assert server.sni == [PINNED, OTHER]
    assert server.seen == [("127.0.0.1", OTHER, f"{OTHER}:{server.port}", "/")]


def test_https_resolves_the_name_once_per_fetch(pki, serve, dns):
    """Each fetch resolves the name exactly once (the check); connecting never resolves it again."""
    server = serve(PINNED)
    resolver = dns({PINNED: ["127.0.0.1"]})
    url = f"https://{PINNED}:{server.port}/"
    with GuardedSession(allow_private=True, resolver=resolver) as session:
        assert session.get(url, verify=pki["ca"], timeout=10).status_code == 200
        assert resolver.calls == [PINNED]
        assert session.get(url + "again", verify=pki["ca"], timeout=10).status_code == 200
        assert resolver.calls == [PINNED, PINNED]
    assert [seen[0] for seen in server.seen] == ["127.0.0.1", "127.0.0.1"]


def test_https_redirect_to_a_name_answering_an_internal_address_is_refused(pki, serve, dns, monkeypatch, workspace):
    """Through the web skill's own redirect loop: a page served over https (on 127.0.0.1, here made
    to count as public) redirects to https://intranet.example, which resolves to 127.0.0.2. With
    private addresses not allowed that hop is refused before any connection; with them allowed the
    same redirect is followed (so the refusal is the check, not a broken setup)."""
    if not loopback_usable():
        pytest.skip("127.0.0.2 is not usable on this machine")
    from assistant_framework.skills import SkillContext, SkillManager

    public = serve(PINNED)
    internal = serve(INTRANET, "127.0.0.2", public.port)
    public.location = f"https://{INTRANET}:{public.port}/admin"
    resolver = dns({PINNED: ["127.0.0.1"], INTRANET: ["127.0.0.2"]})
    real_is_internal = netguard.is_internal
    monkeypatch.setattr(
        netguard, "is_internal", lambda address: str(address) != "127.0.0.1" and real_is_internal(address)
    )

    class TestSession(GuardedSession):  # trusts the test CA and resolves through the test DNS
        def __init__(self, *, allow_private: bool = False) -> None:
            super().__init__(allow_private=allow_private, resolver=resolver)

        def get(self, url, **kwargs):
            return super().get(url, verify=pki["ca"], **kwargs)

    skill_manager = SkillManager.from_config({}, workspace)
    skill_manager.ensure_loaded()
    monkeypatch.setattr(sys.modules[skill_manager.get("web").module_name], "GuardedSession", TestSession)

    def fetch(allow_private: bool):
        context = SkillContext(config={"policy": {"allow_private_network": allow_private}})
        return skill_manager.run("web", {"url": f"https://{PINNED}:{public.port}/hop"}, context)

    result = fetch(allow_private=False)
    assert not result.ok and "internal address" in result.error and INTRANET in result.error
    assert public.seen == [("127.0.0.1", PINNED, f"{PINNED}:{public.port}", "/hop")]
    assert internal.sni == [] and internal.seen == []
    assert resolver.calls == [PINNED, INTRANET]

    result = fetch(allow_private=True)
    assert result.ok and result.value["text"] == "served by 127.0.0.2/intranet.example"
    assert internal.seen == [("127.0.0.2", INTRANET, f"{INTRANET}:{public.port}", "/admin")]


@pytest.mark.parametrize("scheme", ["https", "http"])
def test_a_url_without_a_port_is_pinned_to_the_default_port(scheme):
    """requests hands the adapter no port for ``https://name/``; the pin must still be found (443 or
    80) and, for https, keep the name for SNI and the certificate check."""
    resolver = FakeDNS({PINNED: ["127.0.0.1"]})
    with GuardedSession(allow_private=True, resolver=resolver) as session:
        checked = netguard.resolve_url(f"{scheme}://{PINNED}/", allow_private=True, resolver=resolver)
        session.adapter.pins[(checked.scheme, checked.host, checked.port)] = checked
        request = requests.Request("GET", f"{scheme}://{PINNED}/").prepare()
        host_params, pool_kwargs = session.adapter.build_connection_pool_key_attributes(request, True)
    assert checked.port == (443 if scheme == "https" else 80) and host_params["host"] == "127.0.0.1"
    if scheme == "https":
        assert pool_kwargs["server_hostname"] == PINNED and pool_kwargs["assert_hostname"] == PINNED
