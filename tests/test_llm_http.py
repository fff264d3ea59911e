"""Proxy settings for model calls come from the environment, read once per base URL (issue 19.5)."""

from __future__ import annotations

from messaging_llm_bot.llm.client import LLMClient


def _clean_proxy_env(monkeypatch) -> None:
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


def test_environment_proxy_is_used_and_read_once(monkeypatch, chat_server):
    _clean_proxy_env(monkeypatch)
    # The fake serves absolute-URI requests too, so it can stand in for an HTTP proxy.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{chat_server.port}")
    client = LLMClient.from_section(
        {
            "runners": [
                {"name": "behind-proxy", "base_url": "http://model.invalid:9/v1", "model": "m", "timeout_seconds": 5}
            ],
            "retries_per_runner": 0,
        }
    )
    chat_server.enqueue("through the proxy", "still the same proxy")
    assert client.complete([{"role": "user", "content": "hi"}]).text == "through the proxy"
    assert chat_server.chat_requests[-1].path == "/v1/chat/completions"
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # read once: a later change is not seen
    assert client.complete([{"role": "user", "content": "hi"}]).text == "still the same proxy"
    assert client._session.trust_env is False  # requests does not re-read the environment per call


def test_no_proxy_still_exempts_hosts(monkeypatch, chat_server):
    _clean_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    client = LLMClient.from_section({"runners": [{"name": "direct", "base_url": chat_server.base_url, "model": "m"}]})
    chat_server.enqueue("direct")
    assert client.complete([{"role": "user", "content": "hi"}]).text == "direct"


def test_streamed_calls_reuse_one_connection(chat_server):
    """Regression: the stream was left unread after [DONE], so requests closed the connection and
    every streamed call paid a new TCP connect."""
    client = LLMClient.from_section({"runners": [{"name": "f", "base_url": chat_server.base_url, "model": "m"}]})
    for _ in range(3):
        assert client.complete([{"role": "user", "content": "hi"}], stream=True, on_delta=lambda text: None).text
    ports = {r.client[1] for r in chat_server.chat_requests}
    assert len(ports) == 1, ports
