"""The shared TLS context (assistant_framework/tls.py): made once, with httpx's trust rules."""

from __future__ import annotations

from pathlib import Path

import certifi
import pytest

from assistant_framework.tls import shared_context


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
