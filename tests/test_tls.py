"""The shared TLS context (assistant_framework/tls.py): made once, with httpx's trust rules."""

from __future__ import annotations

import ssl
from pathlib import Path

import certifi
import pytest

from assistant_framework.tls import certificate_refused, shared_context, shared_httpx2_context, system_context


def _one_ca(tmp_path: Path) -> Path:
    """A CA file holding only the first certificate of certifi's bundle."""
    bundle = Path(certifi.where()).read_text(encoding="ascii")
    end = "-----END CERTIFICATE-----"
    path = tmp_path / "one-ca.pem"
    path.write_text(bundle[bundle.index("-----BEGIN CERTIFICATE-----") : bundle.index(end) + len(end)] + "\n")
    return path


def test_the_context_is_made_once_and_trusts_certifis_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    context = shared_context()
    assert shared_context() is context and shared_context(trust_env=False) is context
    assert len(context.get_ca_certs()) > 100  # certifi's bundle, as httpx's verify=True


def test_ssl_cert_file_is_trusted_only_by_clients_that_trust_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(_one_ca(tmp_path)))
    assert len(shared_context().get_ca_certs()) == 1
    assert len(shared_context(trust_env=False).get_ca_certs()) > 100  # Signal's loopback client: trust_env=False


def test_the_httpx2_context_is_made_once_with_httpx2s_trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP SDK's httpx2 trusts the system's store by default, not certifi's bundle; the environment's file
    when it is set, as httpx does."""
    import httpcore2

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    context = shared_httpx2_context()
    assert shared_httpx2_context() is context
    system = httpcore2.default_ssl_context()  # what httpx2.AsyncClient() makes for itself here
    assert context.get_ca_certs() == system.get_ca_certs()
    assert (context.verify_mode, context.check_hostname) == (system.verify_mode, system.check_hostname)
    monkeypatch.setenv("SSL_CERT_FILE", str(_one_ca(tmp_path)))
    assert len(shared_httpx2_context().get_ca_certs()) == 1
    assert shared_httpx2_context(trust_env=False) is context


def test_the_mail_clients_context_is_made_once_with_the_standard_librarys_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """imaplib's and smtplib's clients trusted ``ssl.create_default_context()``, made at every connect: OpenSSL's
    default paths, which are ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` when set (both at once, too). The shared one
    trusts the same, made once per setting."""
    one = str(_one_ca(tmp_path))
    settings: list[dict[str, str]] = [{}, {"SSL_CERT_FILE": one}, {"SSL_CERT_FILE": one, "SSL_CERT_DIR": str(tmp_path)}]
    made = []
    for env in settings:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        context, fresh = system_context(), ssl.create_default_context()
        assert system_context() is context
        assert context.get_ca_certs() == fresh.get_ca_certs(), env
        assert (context.verify_mode, context.check_hostname) == (ssl.CERT_REQUIRED, True)
        made.append(context)
    assert len(made[1].get_ca_certs()) == 1
    assert len({id(context) for context in made}) == len(settings)  # one per setting


def test_a_ca_file_is_trusted_alone_and_read_again_when_it_changes(tmp_path: Path) -> None:
    """A server's ``ca_file`` (a private CA) is trusted in place of the system's store; the same file is not read
    again at every connect, a file rewritten is."""
    ca = _one_ca(tmp_path)
    context = system_context(str(ca))
    assert system_context(str(ca)) is context and len(context.get_ca_certs()) == 1
    bundle = Path(certifi.where()).read_text(encoding="ascii")
    ca.write_text(bundle, encoding="ascii")
    again = system_context(str(ca))
    assert again is not context and len(again.get_ca_certs()) > 100
    with pytest.raises(FileNotFoundError):
        system_context(str(tmp_path / "missing.pem"))
    (tmp_path / "empty.pem").write_text("not a certificate\n")
    with pytest.raises(ssl.SSLError):
        system_context(str(tmp_path / "empty.pem"))


def test_a_refused_certificate_says_what_to_set_only_when_a_setting_can_help() -> None:
    """An untrusted CA and another name are met by the servers of tests/test_email_tls.py; an expired certificate
    is not fixed by trusting its CA or by another host name: the sentence only says why."""
    expired = ssl.SSLCertVerificationError(1, "certificate verify failed")
    expired.verify_code, expired.verify_message = 10, "certificate has expired"
    assert certificate_refused(expired, "email.imap") == "the server's certificate is refused (certificate has expired)"


def test_no_tls_context_of_the_project_is_made_outside_tls_py() -> None:
    """``ssl.create_default_context()`` reads and parses the CA store at every call (about 20 ms of CPU): the mail
    clients take theirs from assistant_framework/tls.py, made once per process and setting."""
    import ast

    root = Path(__file__).resolve().parent.parent
    made = []
    for package in ("assistant_framework", "messaging_llm_bot", "skills", "collectors"):
        for path in sorted((root / package).rglob("*.py")):
            if path == root / "assistant_framework" / "tls.py":
                continue
            source = path.read_text(encoding="utf-8")
            if "create_default_context" not in source:
                continue
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Attribute) and node.attr == "create_default_context":
                    made.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not made, f"TLS contexts made outside assistant_framework/tls.py: {made}"


#: httpx's calls that make a client of their own, each with a TLS context unless given one.
_CLIENT_MAKERS = frozenset("Client AsyncClient get post put patch delete head options request stream".split())


def test_every_httpx_client_of_the_project_is_given_a_context() -> None:
    """A client (or one-shot call) without ``verify`` makes its own context from certifi's bundle, about 25 ms of
    CPU each time: the channels' probes (doctor, setup) and file downloads pass ``verify=shared_context()``, the MCP
    client over HTTP (httpx2) ``verify=shared_httpx2_context()``."""
    import ast

    root = Path(__file__).resolve().parent.parent
    bare = []
    for package in ("assistant_framework", "messaging_llm_bot", "skills", "collectors"):
        for path in sorted((root / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            if "httpx." not in source and "httpx2." not in source:
                continue
            for node in ast.walk(ast.parse(source)):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("httpx", "httpx2")
                    and node.func.attr in _CLIENT_MAKERS
                    and not any(keyword.arg in ("verify", "transport") for keyword in node.keywords)
                ):
                    bare.append(f"{path.relative_to(root)}:{node.lineno} httpx.{node.func.attr}")
    assert not bare, f"httpx clients without a shared context: {bare}"
