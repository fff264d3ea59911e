"""The suite's own guard (tests/loopback_only.py): a test whose process reaches past loopback fails, naming
the address, even when the code under test caught the error; loopback, a socket pair and the ``dns``
fixture's made-up names stay usable. Run as an inner pytest session in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.loopback_only import is_local

REPO = Path(__file__).resolve().parent.parent

INNER = """
import socket
import urllib.request

import pytest

from tests.fakes.dns import FakeDNS


def test_connect_outside_caught_by_the_code():
    try:
        socket.create_connection(("192.0.2.7", 80), timeout=1)
    except OSError:
        pass  # the code under test swallows it; the guard still fails the test


def test_connect_ex_outside():
    with socket.socket() as sock:
        assert sock.connect_ex(("198.51.100.3", 25)) != 0  # an error number, as offline


def test_name_lookup():
    with pytest.raises(OSError):
        urllib.request.urlopen("http://example.com/", timeout=1)


def test_loopback_and_local_sockets_work():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
        with socket.create_connection(("localhost", server.getsockname()[1]), timeout=5):
            pass
    a, b = socket.socketpair()
    a.close(), b.close()


def test_made_up_names_answered_by_the_dns_fixture_work(monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", FakeDNS({"feeds.test": ["127.0.0.1"]}, socket.getaddrinfo))
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(("feeds.test", server.getsockname()[1]), timeout=5):
            pass
"""


def test_a_test_reaching_past_loopback_fails_naming_the_address(tmp_path):
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.loopback_only", "-q", "-p", "no:cacheprovider", "-rf"]
        + ["--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    failed = {line.split("::")[1].split(" ")[0] for line in out.splitlines() if line.startswith("FAILED")}
    assert failed == {"test_connect_outside_caught_by_the_code", "test_connect_ex_outside", "test_name_lookup"}, out
    assert "connect to 192.0.2.7:80" in out or "open a connection to 192.0.2.7:80" in out
    assert "198.51.100.3:25" in out and "look up the name 'example.com'" in out
    assert "outside loopback" in out and "2 passed" in out


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("LOCALHOST.", True),
        (b"localhost", True),
        ("0.0.0.0", True),
        ("10.0.0.1", False),
        ("192.0.2.7", False),
        ("::ffff:192.0.2.7", False),
        ("localhost.example.com", False),
        ("example.com", False),
        (("127.0.0.1", 80), False),
    ],
)
def test_what_counts_as_loopback(host, local):
    """The guard's neighbour: a mapped or bracketed loopback stays usable, a mapped outside address does not."""
    assert is_local(host) is local
