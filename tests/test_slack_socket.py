"""Slack over Socket Mode through the real bot process (``python -m messaging_llm_bot``, Slack only,
``slack.socket_mode``) against the fake Slack API and its Socket Mode server (tests/fakes/slack_socket.py): the bot
connects with the app-level token, a DM sent as an envelope gets one answer and the envelope is acknowledged; an
envelope delivered twice is answered once; a ``disconnect`` envelope makes the bot connect again and go on; a button
pressed on a question comes as an ``interactive`` envelope and answers it; a slash command comes as a
``slash_commands`` envelope, acknowledged and answered in its chat; doctor checks the app-level token. One
bot process for the module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.crash_bot import BotProcess
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.slack_api import FakeSlackAPI
from tests.fakes.slack_socket import FakeSocketMode
from tests.waiting import wait_until

OWNER = "U0OWNER001"
TOKEN = "xoxb-test-token-0001"
APP_TOKEN = "xapp-1-A0APP00001-1-socket-test"
CONNECTED = "slack: taking events over Socket Mode"


@dataclass
class Running:
    bot: BotProcess
    slack: FakeSlackAPI
    socket: FakeSocketMode
    model: FakeChatServer
    workspace: Path


def _pending(workspace: Path) -> list[Path]:
    return list((workspace / "state/inbox/pending").rglob("*.json"))


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("slack-socket")
    with FakeChatServer() as model, FakeSlackAPI(token=TOKEN, app_token=APP_TOKEN) as slack:
        slack.add_user(OWNER)
        socket = slack.socket_mode()
        config = {
            "llm": {
                "runners": [{"name": "fake", "base_url": model.base_url, "model": "fake-model", "timeout_seconds": 30}],
                "max_skill_rounds": 3,
                "retries_per_runner": 0,
            },
            "runtime": {"timezone": "Europe/Berlin", "log_level": "INFO", "shutdown_timeout_seconds": 2},
            "telegram": {"token": ""},
            "memory": {"enabled": False},
            "slack": {
                "enabled": True,
                "socket_mode": True,
                "bot_token_env": "SLACK_TEST_TOKEN",
                "app_token_env": "SLACK_TEST_APP_TOKEN",
                "allowed": [OWNER],
                "base_url": slack.base_url,
            },
        }
        path = folder / "config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        env = {"SLACK_TEST_TOKEN": TOKEN, "SLACK_TEST_APP_TOKEN": APP_TOKEN}
        bot = BotProcess(path, folder / "workspace", folder / "bot.log", env=env)
        with bot:
            bot.start()
            wait_until(lambda: _connected(bot), timeout=60, what="the bot to connect over Socket Mode")
            yield Running(bot, slack, socket, model, folder / "workspace")
            assert bot.terminate() == 0  # SIGTERM: the connection closed, the bot stops cleanly
        log = bot.log_text()
        assert APP_TOKEN not in log and TOKEN not in log  # the tokens are never logged
        assert "Traceback" not in log and "Unclosed" not in log
        assert socket.bad_frames == []  # the bot sent nothing but acknowledgements


def _connected(bot: BotProcess) -> bool:
    if bot.proc is not None and bot.proc.poll() is not None:
        raise AssertionError(f"the bot exited with {bot.proc.returncode}:\n{bot.run_log()[-3000:]}")
    return CONNECTED in bot.run_log()


def test_a_dm_over_socket_mode_gets_one_answer_and_its_envelope_is_acknowledged(running: Running) -> None:
    slack, socket, model = running.slack, running.socket, running.model
    model.reset()
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    model.enqueue('{"reply": "Berlin."}')
    envelope = socket.send(slack.dm(OWNER, "What is the capital of Germany?"))
    wait_until(lambda: len(slack.posted(dm)) > before and not _pending(running.workspace), what="the answer")
    assert [m["text"] for m in slack.posted(dm)[before:]] == ["Berlin."]
    # Acknowledged, and answered once however often it came: under load the acknowledgement (sent once the event
    # is stored) came after the fake's 3 s, or the client connected again, and the envelope was sent again.
    assert envelope in socket.acked
    assert "What is the capital of Germany?" in str(model.chat_requests[0]["messages"][-1])


def test_an_envelope_delivered_twice_is_answered_once(running: Running) -> None:
    slack, socket, model = running.slack, running.socket, running.model
    model.reset()
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    model.enqueue('{"reply": "Vienna."}', '{"reply": "a second answer"}')
    payload = slack.dm(OWNER, "And Austria?")
    envelope = socket.send(payload)
    socket.again(envelope)  # Slack was not sure it arrived
    wait_until(lambda: socket.acks.count(envelope) == 2, what="both deliveries taken and acknowledged")
    wait_until(lambda: len(slack.posted(dm)) > before and not _pending(running.workspace), what="the answer")
    assert [m["text"] for m in slack.posted(dm)[before:]] == ["Vienna."]
    assert len(model.chat_requests) == 1
    assert socket.attempts(envelope) >= 2 and envelope in socket.acked  # a third, Slack's own retry, under load


def test_a_disconnect_envelope_makes_the_bot_connect_again(running: Running) -> None:
    slack, socket, model = running.slack, running.socket, running.model
    model.reset()
    dm = slack.dms[OWNER]
    before, connections = len(slack.posted(dm)), socket.connections
    socket.disconnect()
    wait_until(lambda: socket.connections > connections, what="a new connection")
    model.enqueue('{"reply": "Bern."}')
    envelope = socket.send(slack.dm(OWNER, "And Switzerland?"))
    wait_until(lambda: len(slack.posted(dm)) > before and not _pending(running.workspace), what="the answer")
    assert [m["text"] for m in slack.posted(dm)[before:]] == ["Bern."]
    assert envelope in socket.acked


def test_a_button_press_comes_as_an_interactive_envelope(running: Running) -> None:
    slack, socket, model, workspace = running.slack, running.socket, running.model, running.workspace
    model.reset()
    (workspace / "notes").mkdir(parents=True, exist_ok=True)
    (workspace / "notes/old.md").write_text("# Old\n")
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    model.enqueue('{"skill": "file", "args": {"action": "delete", "path": "notes/old.md"}}', '{"reply": "Gone."}')
    socket.send(slack.dm(OWNER, "delete notes/old.md"))
    wait_until(lambda: any(m.get("blocks") for m in slack.posted(dm)[before:]), what="the question")
    [question] = [m for m in slack.posted(dm)[before:] if m.get("blocks")]
    envelope = socket.send(slack.press(OWNER, dm, question["ts"], "approve_yes"), kind="interactive")
    wait_until(lambda: any("Gone." in m["text"] for m in slack.posted(dm)[before:]), what="the reply")
    assert not (workspace / "notes/old.md").exists() and envelope in socket.acked


def test_a_slash_command_comes_as_an_envelope_acknowledged_and_answered_in_the_chat(running: Running) -> None:
    slack, socket, model = running.slack, running.socket, running.model
    model.reset()
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    envelope = socket.send(slack.slash(OWNER, "/skill x&y>z"), kind="slash_commands")
    wait_until(lambda: len(slack.posted(dm)) > before, what="the answer to /skill")
    [answer] = [m["text"] for m in slack.posted(dm)[before:]]
    # The command's text as typed (Slack sent it escaped), the answer escaped once for Slack.
    assert answer.startswith("There is no skill named 'x&amp;y&gt;z'."), answer
    assert envelope in socket.acked  # answered once above, however often it came
    assert model.chat_requests == [] and not _pending(running.workspace)


def test_doctor_checks_the_app_token(
    running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from messaging_llm_bot.cli.main import main

    monkeypatch.setenv("SLACK_DOCTOR_TOKEN", TOKEN)
    config = tmp_path / "config"
    config.mkdir()
    (config / "llm.json").write_text(
        json.dumps({"runners": [{"name": "l", "base_url": running.model.base_url, "model": "m"}]})
    )
    section = {
        "enabled": True,
        "socket_mode": True,
        "bot_token_env": "SLACK_DOCTOR_TOKEN",
        "app_token_env": "SLACK_DOCTOR_APP_TOKEN",
        "allowed": [OWNER],
        "base_url": running.slack.base_url,
    }

    def doctor(app_token: str) -> dict[str, dict[str, str]]:
        monkeypatch.setenv("SLACK_DOCTOR_APP_TOKEN", app_token)
        (config / "slack.json").write_text(json.dumps(section))
        main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
        return {c["name"]: c for c in json.loads(capsys.readouterr().out)}

    checks = doctor(APP_TOKEN)
    assert checks["slack app token"]["status"] == "ok", checks["slack app token"]
    assert "slack request url" not in checks  # no request URL over Socket Mode
    assert "/stop" in checks["slack commands"]["detail"] and "request URL" not in checks["slack commands"]["detail"]
    checks = doctor("xapp-1-A0APP00001-1-wrong")
    assert checks["slack app token"]["status"] == "fail" and "invalid_auth" in checks["slack app token"]["detail"]
    checks = doctor(TOKEN)  # a bot token where the app-level one belongs
    assert checks["slack secrets"]["status"] == "fail" and "xapp-" in checks["slack secrets"]["detail"]
    assert "xapp-1-A0APP00001-1-wrong" not in json.dumps(checks)  # the token is never shown
