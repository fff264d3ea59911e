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


def test_request_body_is_the_json_requests_sent_with_the_schema_encoded_once(chat_server):
    """The body on the wire is byte for byte ``json.dumps(body)`` (what requests' ``json=`` sent), as JSON; the
    answer schema, the same object request after request (SkillFormats), is encoded once and its text reused."""
    import json

    import pytest

    from messaging_llm_bot.llm.body import BodyEncoder

    client = LLMClient.from_section(
        {
            "runners": [{"name": "r", "base_url": chat_server.base_url, "model": "m", "timeout_seconds": 5}],
            "retries_per_runner": 0,
            "structured_output": "json_schema",
        }
    )
    schema = {"anyOf": [{"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]}]}
    chat_server.enqueue('{"reply": "one"}', '{"reply": "two"}')
    for text in ('héllo \u2028 "quoted"', "again"):
        client.complete([{"role": "user", "content": text}], schema=schema, schema_name="skill_call")
    first, second = chat_server.chat_requests[-2:]
    for request in (first, second):
        assert request.headers["Content-Type"] == "application/json"
        assert request.body == json.dumps(dict(request)).encode()
    assert first["response_format"]["json_schema"]["schema"] == schema
    assert first["messages"][-1]["content"] == 'héllo \u2028 "quoted"'

    encoder = BodyEncoder()
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "ü"}],
        "tools": tools,
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
    }
    assert encoder.encode(body) == json.dumps(body).encode()
    schema["anyOf"].append({"type": "null"})  # changed in place (SkillFormats never does): the kept text is sent
    tools.clear()
    sent = json.loads(encoder.encode(body))
    assert len(sent["response_format"]["json_schema"]["schema"]["anyOf"]) == 1 and len(sent["tools"]) == 1
    fresh = json.loads(json.dumps(body))  # other objects: encoded anew
    assert encoder.encode(fresh) == json.dumps(fresh).encode()
    with pytest.raises(ValueError):
        encoder.encode({"model": "m", "temperature": float("nan")})
