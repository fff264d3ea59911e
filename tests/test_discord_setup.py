"""``assistant setup --discord USER_ID`` configures the Discord channel (issue 50): by flags, against the fake
Discord, the token tried from the named environment variable (never written), the settings in the local layer
with ``enabled`` last; a wrong token stops setup with nothing written. ``doctor`` checks the allowlist, the token
and the application's message content intent."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from messaging_llm_bot.cli.main import main
from tests.fakes.chat_server import FakeChatServer
from tests.setup_runs import channel_setup, example_config
from tests.waiting import wait_until

if TYPE_CHECKING:
    from tests.fakes.discord_api import FakeDiscordAPI


def fake_discord() -> FakeDiscordAPI:
    """A fake Discord, not started; imported here: its aiohttp cost each xdist worker 0.1 s at collection."""
    from tests.fakes.discord_api import FakeDiscordAPI

    return FakeDiscordAPI()


REPO = Path(__file__).resolve().parents[1]
OWNER = "80351110224678912"


def _setup(
    config: Path, tmp_path: Path, chat: FakeChatServer, discord: FakeDiscordAPI, owner: str = OWNER, *more: str
) -> int:
    return channel_setup(
        config,
        tmp_path,
        chat,
        *("--discord", owner, "--discord-base-url", discord.base_url, "--discord-token-env", "DC_SETUP_TOKEN"),
        *more,
    )


def test_setup_writes_the_discord_channel_and_refuses_a_wrong_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = example_config(tmp_path)
    with FakeChatServer() as chat, fake_discord() as discord:
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("DC_SETUP_TOKEN", discord.token + "-wrong")
        assert _setup(config, tmp_path, chat, discord) == 2
        assert "401" in capsys.readouterr().err and not (config / "local" / "discord.json").exists()

        monkeypatch.setenv("DC_SETUP_TOKEN", discord.token)
        assert _setup(config, tmp_path, chat, discord) == 0, capsys.readouterr()
        assert "is the bot assistant" in capsys.readouterr().out
        written = json.loads((config / "local" / "discord.json").read_text())
        assert written["enabled"] is True and written["allowed"] == [OWNER]
        assert written["bot_token_env"] == "DC_SETUP_TOKEN" and written["base_url"] == discord.base_url
        assert discord.token not in (config / "local" / "discord.json").read_text()
        assert _setup(config, tmp_path, chat, discord, owner="not-an-id") == 2
        assert "not a Discord user id" in capsys.readouterr().err


def test_doctor_checks_the_token_the_intent_and_the_allowlist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    with FakeChatServer() as chat, fake_discord() as discord:
        (config / "llm.json").write_text(
            json.dumps({"runners": [{"name": "l", "base_url": chat.base_url, "model": "m"}]})
        )
        section = {
            "enabled": True,
            "bot_token_env": "DC_DOCTOR_TOKEN",
            "allowed": [OWNER],
            "base_url": discord.base_url,
        }

        def doctor() -> dict[str, dict[str, str]]:
            (config / "discord.json").write_text(json.dumps(section))
            main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
            return {c["name"]: c for c in json.loads(capsys.readouterr().out)}

        monkeypatch.setenv("DC_DOCTOR_TOKEN", discord.token)
        checks = doctor()
        assert checks["discord allowlist"]["status"] == "ok" and OWNER in checks["discord allowlist"]["detail"]
        assert checks["discord token"]["status"] == "ok" and "assistant" in checks["discord token"]["detail"]
        assert checks["discord intent"]["status"] == "ok"
        discord.message_content = False
        assert doctor()["discord intent"]["status"] == "fail"
        monkeypatch.setenv("DC_DOCTOR_TOKEN", "wrong-token")
        section["allowed"] = []
        checks = doctor()
        assert checks["discord allowlist"]["status"] == "fail"
        assert checks["discord token"]["status"] == "fail" and "401" in checks["discord token"]["detail"]
        assert "wrong-token" not in json.dumps(checks)  # the token is never shown


def test_setup_reads_the_owner_from_their_first_dm_through_the_gateway(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--discord find``: the user id of whoever writes to the bot in a DM while setup holds the gateway open (a
    message in a server is no one's), written as the allowlist; nobody writing ends setup naming the flag."""
    config = example_config(tmp_path)
    with FakeChatServer() as chat, fake_discord() as discord:
        chat.set_handler(lambda request: "OK")
        monkeypatch.setenv("DC_SETUP_TOKEN", discord.token)
        assert _setup(config, tmp_path, chat, discord, "find", "--wait", "0.1") == 2
        err = capsys.readouterr().err
        assert "no message arrived" in err and "--discord ID" in err
        assert not (config / "local" / "discord.json").exists()

        identified = len(discord.identified)
        done: list[int] = []
        run = threading.Thread(
            target=lambda: done.append(_setup(config, tmp_path, chat, discord, "find", "--wait", "20"))
        )
        run.start()
        wait_until(lambda: len(discord.identified) > identified, what="setup's gateway session")
        discord.say(OWNER, discord.add_channel("81384788765712384"), "in a server", mention=True)
        discord.dm(OWNER, "hello, it's me")
        run.join(30)
        assert done == [0], capsys.readouterr()
        out = capsys.readouterr().out
        said = f'got a message from {discord.users[OWNER]["global_name"]} (id {OWNER}): "hello, it\'s me"'
        assert said in out, out
        assert json.loads((config / "local" / "discord.json").read_text())["allowed"] == [OWNER]
