"""serve.clients: configured once, read from a real config tree, tokens from the environment, never an open door."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant_framework.config import ConfigError, load_config
from assistant_framework.config.settings import Settings
from assistant_framework.serve.clients import MIN_TOKEN_CHARS, PerMinute, client_for, read_clients

TOKEN = "t" * MIN_TOKEN_CHARS
OTHER = "o" * 40


def _config(tmp_path: Path, serve: object) -> Path:
    root = tmp_path / "config"
    root.mkdir()
    (root / "serve.json").write_text(json.dumps(serve), encoding="utf-8")
    return root


def _settings(tmp_path: Path, serve: object) -> Settings:
    return Settings.from_config(load_config(_config(tmp_path, serve), local=False))


def test_clients_read_once_with_their_tokens(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path,
        {
            "clients": [
                {"name": "desk", "token_env": "DESK_TOKEN"},
                {"name": "scripts", "token_env": "SCRIPTS_TOKEN", "write": True, "skills": ["notes"]},
            ]
        },
    )
    clients = read_clients(settings.serve, {"DESK_TOKEN": TOKEN, "SCRIPTS_TOKEN": OTHER})
    assert [(c.name, c.write, c.settings.skills) for c in clients] == [
        ("desk", False, ()),
        ("scripts", True, ("notes",)),
    ]
    assert client_for(clients, f"Bearer {TOKEN}") is clients[0]
    assert client_for(clients, f"bearer {OTHER}") is clients[1]
    assert clients[1].source == "mcp:scripts" and clients[1].conversation_id == "api:scripts"
    # No token, a wrong one, a prefix of the right one, another scheme: nobody.
    for header in (None, "", "Bearer ", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN):
        assert client_for(clients, header) is None, header
    assert TOKEN not in repr(clients)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "DESK_TOKEN is not set"),
        ({"DESK_TOKEN": "  "}, "DESK_TOKEN is not set"),
        ({"DESK_TOKEN": "short"}, "shorter"),
    ],
)
def test_a_client_without_a_usable_token_is_a_config_error_naming_the_variable(
    tmp_path: Path, environ: dict[str, str], expected: str
) -> None:
    settings = _settings(tmp_path, {"clients": [{"name": "desk", "token_env": "DESK_TOKEN"}]})
    with pytest.raises(ConfigError, match=expected) as exc:
        read_clients(settings.serve, environ)
    assert "'desk'" in str(exc.value)


@pytest.mark.parametrize(
    ("serve", "key"),
    [
        ({"clients": [{"name": "desk"}]}, "token_env"),
        ({"clients": [{"name": "a/b", "token_env": "X"}]}, "name"),
        ({"clients": [{"name": "desk", "token_env": "X", "token": "secret"}]}, "token"),
        ({"clients": [{"name": "desk", "token_env": "X"}, {"name": "Desk", "token_env": "Y"}]}, "clients[1].name"),
        ({"per_minute": 0}, "per_minute"),
    ],
)
def test_bad_serve_entries_are_config_errors_naming_file_and_key(tmp_path: Path, serve: object, key: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(_config(tmp_path, serve), local=False)
    assert "serve.json" in str(exc.value) and key.split(".")[-1].split("[")[0] in str(exc.value)


def test_per_minute_counts_each_client_apart() -> None:
    now = [0.0]
    limit = PerMinute(2, clock=lambda: now[0])
    assert limit.allow("a") and limit.allow("a") and not limit.allow("a")
    assert limit.allow("b")
    now[0] = 60.0
    assert limit.allow("a")


def test_doctor_shows_the_servers_and_names_a_clients_unset_variable(tmp_path: Path, monkeypatch, capsys) -> None:
    from messaging_llm_bot.cli.main import main
    from tests.fakes.bot_api import FakeBotAPI
    from tests.fakes.chat_server import FakeChatServer

    with FakeBotAPI() as tg, FakeChatServer() as chat:
        root = _config(
            tmp_path,
            {
                "clients": [
                    {"name": "desk", "token_env": "DESK_TOKEN_T", "skills": ["time", "notes"], "owner": True},
                    {"name": "scripts", "token_env": "SCRIPTS_TOKEN_T", "write": True},
                ]
            },
        )
        (root / "telegram.json").write_text(
            json.dumps({"token": tg.token, "base_url": tg.base_url, "allowed_user_ids": [42]})
        )
        (root / "llm.json").write_text(
            json.dumps({"runners": [{"name": "local", "base_url": chat.base_url, "model": "fake-model"}]})
        )
        monkeypatch.setenv("DESK_TOKEN_T", TOKEN)
        monkeypatch.delenv("SCRIPTS_TOKEN_T", raising=False)
        code = main(["doctor", "--json", "--config", str(root), "--workspace", str(tmp_path / "ws")])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert code == 1
    assert checks["serve mcp"]["status"] == "ok" and "assistant mcp serve" in checks["serve mcp"]["detail"]
    assert "/mcp" in checks["serve mcp"]["detail"]
    desk = checks["serve client desk"]
    assert desk["status"] == "ok" and "reads only" in desk["detail"]
    assert "chat skills: time, notes" in desk["detail"] and "the owner's own chat" in desk["detail"]
    # The chat endpoint is the bot's: without web.enabled doctor says how to get it.
    chat_line = checks["serve chat"]
    assert chat_line["status"] == "skip" and "web.enabled is false" in chat_line["detail"], chat_line
    assert "config set web.enabled true" in chat_line["fix"]
    failed = checks["serve client scripts"]
    assert failed["status"] == "fail" and "SCRIPTS_TOKEN_T is not set" in failed["detail"]
