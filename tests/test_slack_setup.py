"""``assistant setup --slack-owner`` configures the Slack channel (issue 50): by flags, against the fake Slack
Web API, the token tried from the named environment variable (never written), the settings in the local layer
with ``enabled`` last; a wrong token stops setup with nothing written. With ``--slack-app-token-env`` it sets up
Socket Mode, the app-level token tried the same way. Either way it prints the slash commands to register, made from
the bot's command list (with the request URL over HTTP)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from messaging_llm_bot.conversation.commands import COMMANDS
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.slack_api import FakeSlackAPI
from tests.setup_runs import channel_setup, example_config


def _setup(
    config: Path, tmp_path: Path, chat: FakeChatServer, slack: FakeSlackAPI, owner: str = "U0OWNER001", *more: str
) -> int:
    return channel_setup(
        config,
        tmp_path,
        chat,
        *("--slack-owner", owner, "--slack-base-url", slack.base_url),
        *("--slack-token-env", "SL_SETUP_TOKEN", "--slack-secret-env", "SL_SETUP_SECRET", *more),
    )


def _registered(out: str) -> list[tuple[str, str | None]]:
    """The slash commands setup says to register (the manifest's list it prints): each one's name and URL."""
    listed = json.loads(out.split("features.slash_commands in the app's manifest):\n", 1)[1].split("\n]", 1)[0] + "]")
    return [(one["command"], one.get("url")) for one in listed]


def test_setup_writes_the_slack_channel_and_refuses_a_wrong_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = example_config(tmp_path)
    monkeypatch.setenv("SL_SETUP_SECRET", "a-signing-secret-0123456789")
    with FakeChatServer() as chat, FakeSlackAPI() as slack:
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("SL_SETUP_TOKEN", slack.token + "-wrong")
        assert _setup(config, tmp_path, chat, slack) == 2
        assert "invalid_auth" in capsys.readouterr().err and not (config / "local" / "slack.json").exists()

        monkeypatch.setenv("SL_SETUP_TOKEN", slack.token)
        assert _setup(config, tmp_path, chat, slack) == 0, capsys.readouterr()
        out = capsys.readouterr().out
        assert "is the bot assistant in Example Team" in out and "/slack/events" in out
        assert _registered(out) == [(f"/{name}", "https://YOUR-HOST/slack/events") for name, _ in COMMANDS]
        written = json.loads((config / "local" / "slack.json").read_text())
        assert written["enabled"] is True and written["allowed"] == ["U0OWNER001"]
        assert written["bot_token_env"] == "SL_SETUP_TOKEN" and written["signing_secret_env"] == "SL_SETUP_SECRET"
        assert slack.token not in (config / "local" / "slack.json").read_text()
        assert _setup(config, tmp_path, chat, slack, owner="not-an-id") == 2
        assert "not a Slack member id" in capsys.readouterr().err


def test_setup_writes_socket_mode_and_refuses_a_wrong_app_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = example_config(tmp_path)
    with FakeChatServer() as chat, FakeSlackAPI() as slack:
        slack.socket_mode()
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("SL_SETUP_TOKEN", slack.token)
        monkeypatch.setenv("SL_SETUP_APP", slack.app_token + "-wrong")
        assert _setup(config, tmp_path, chat, slack, "U0OWNER001", "--slack-app-token-env", "SL_SETUP_APP") == 2
        assert "invalid_auth" in capsys.readouterr().err and not (config / "local" / "slack.json").exists()

        monkeypatch.setenv("SL_SETUP_APP", slack.app_token)
        assert _setup(config, tmp_path, chat, slack, "U0OWNER001", "--slack-app-token-env", "SL_SETUP_APP") == 0
        out = capsys.readouterr().out
        assert "opens a Socket Mode connection" in out and "request URL" not in out.split("Socket Mode in your app")[0]
        assert _registered(out) == [(f"/{name}", None) for name, _ in COMMANDS]  # no URL over Socket Mode
        written = json.loads((config / "local" / "slack.json").read_text())
        assert written["socket_mode"] is True and written["app_token_env"] == "SL_SETUP_APP"
        assert "signing_secret_env" not in written and slack.app_token not in json.dumps(written)


def test_setup_reads_the_owner_from_their_first_dm_to_the_bot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--slack-owner find``: the member id of whoever wrote to the bot in a DM (the bot's own messages are no
    one's); nobody writing, or several people without a terminal, ends setup with nothing written, naming the
    flag."""
    config = example_config(tmp_path)
    monkeypatch.setenv("SL_SETUP_SECRET", "a-signing-secret-0123456789")
    with FakeChatServer() as chat, FakeSlackAPI() as slack:
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("SL_SETUP_TOKEN", slack.token)
        dm = slack.add_user("U0OWNER001")
        slack.post_message({"channel": dm, "text": "the bot's own words"})
        assert _setup(config, tmp_path, chat, slack, "find", "--wait", "0.5") == 2
        err = capsys.readouterr().err
        assert "no message arrived" in err and "--slack-owner ID" in err
        assert not (config / "local" / "slack.json").exists()

        slack.dm("U0OWNER001", "hello, it's me")
        assert _setup(config, tmp_path, chat, slack, "find", "--wait", "5") == 0, capsys.readouterr()
        out = capsys.readouterr().out
        assert 'got a message from U0OWNER001 (id U0OWNER001): "hello, it\'s me"' in out, out
        assert json.loads((config / "local" / "slack.json").read_text())["allowed"] == ["U0OWNER001"]

        slack.dm("U0FRIEND01", "me too")
        assert _setup(config, tmp_path, chat, slack, "find", "--wait", "5") == 2
        assert "several people wrote to the bot" in capsys.readouterr().err
