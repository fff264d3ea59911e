"""The real bot process (``python -m messaging_llm_bot``) on Matrix, against the session's real Synapse: the
owner's message in a direct room gets one answer there; a stranger's invite is not joined; a SIGKILL during
the model's call answers the message once after the restart. One bot process for the module (killed and
started again by the last test); the variations run in-process in tests/test_matrix.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.crash_bot import BotProcess
from tests.fakes.chat_server import FakeChatServer
from tests.matrix_harness import PASSWORD, MatrixWorld, Synapse
from tests.waiting import wait_until


@dataclass
class Running:
    world: MatrixWorld
    room: str  # the owner's direct room
    bot: BotProcess
    model: FakeChatServer
    workspace: Path


def _ready(bot: BotProcess) -> bool:
    if bot.proc is not None and bot.proc.poll() is not None:
        raise AssertionError(f"the bot exited with {bot.proc.returncode}:\n{bot.run_log()[-3000:]}")
    return "matrix: serving @" in bot.run_log()


@pytest.fixture(scope="module")
def running(synapse: Synapse, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("matrix-bot")
    world = MatrixWorld.registered(synapse)
    with FakeChatServer() as model:
        config = {
            "llm": {
                "runners": [{"name": "fake", "base_url": model.base_url, "model": "fake-model", "timeout_seconds": 30}],
                "max_skill_rounds": 3,
                "retries_per_runner": 0,
                "stream": False,
            },
            "runtime": {"timezone": "Europe/Berlin", "log_level": "INFO", "shutdown_timeout_seconds": 2},
            "telegram": {"token": ""},
            "memory": {"enabled": False},
            "matrix": {
                "enabled": True,
                "homeserver": synapse.url,
                "user_id": world.bot.user_id,
                "password_env": "MATRIX_TEST_PASSWORD",
                "allowed": [world.owner.user_id],
            },
        }
        path = folder / "config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        room = world.direct_room()
        bot = BotProcess(path, folder / "workspace", folder / "bot.log", env={"MATRIX_TEST_PASSWORD": PASSWORD})
        with bot:
            bot.start()
            wait_until(lambda: _ready(bot), timeout=60, what="the bot process to log in")
            wait_until(lambda: world.joined(room), timeout=30, what="the bot to join the owner's direct room")
            yield Running(world, room, bot, model, folder / "workspace")
        assert PASSWORD not in bot.log_text()  # the password from the environment is never logged


def _answers(running: Running) -> list[str]:
    return running.world.owner.texts(running.room, running.world.bot.user_id)


def test_the_owners_message_in_a_direct_room_gets_one_answer_there(running: Running) -> None:
    running.model.enqueue('{"reply": "Paris is the capital."}')
    running.world.owner.send(running.room, "What is the capital of France?")
    wait_until(lambda: _answers(running), timeout=30, what="the answer")
    wait_until(lambda: not list((running.workspace / "state/inbox/pending").rglob("*.json")), what="the item done")
    assert _answers(running) == ["Paris is the capital."]
    assert len(running.model.chat_requests) == 1
    assert "What is the capital of France?" in str(running.model.chat_requests[0]["messages"][-1])


def test_a_strangers_invite_is_not_joined(running: Running) -> None:
    world = running.world
    room = world.stranger.create_room([world.bot.user_id], direct=True)
    # refused: the bot's membership goes from "invite" to "leave"; it never joins
    wait_until(lambda: world.stranger.members(room).get(world.bot.user_id) == "leave", timeout=30, what="a refusal")
    assert "refused the invite" in running.bot.run_log()
    with pytest.raises(AssertionError, match="403"):  # not a member: the bot's account cannot write there
        world.bot.send(room, "I should not be able to write here")


def test_a_sigkill_during_the_model_call_answers_once_after_the_restart(running: Running) -> None:
    world, model, bot = running.world, running.model, running.bot
    model.reset()
    model.enqueue({"content": json.dumps({"reply": "too late"}), "delay": 30})
    world.owner.send(running.room, "a slow question")
    assert model.wait_for_requests(1, timeout=30, path="/chat/completions")
    bot.kill()
    model.reset()
    model.enqueue('{"reply": "answered after the restart"}')
    bot.start()
    wait_until(lambda: "answered after the restart" in _answers(running), timeout=60, what="the answer")
    wait_until(lambda: not list((running.workspace / "state/inbox/pending").rglob("*.json")), what="the item done")
    answers = _answers(running)
    assert answers.count("answered after the restart") == 1 and "too late" not in answers
    assert len(model.chat_requests) == 1  # asked once more, by the next start


def test_a_live_message_that_reached_synapse_just_before_a_kill_is_taken_over_not_left(running: Running) -> None:
    """SIGKILL while the live message's send is in flight: Synapse made the event, the ledger never recorded it.
    The test plays that send after the kill (the bot's own device, the live message's transaction id of the
    item, as MatrixLive sends it). The restarted turn answers without a live message of its own (no streaming
    here), so its reply takes the left one over by the same transaction id and edits it into the answer: one
    message in the room, not the half-written one beside the answer."""
    import asyncio

    from assistant_framework.config.settings import MatrixSettings
    from assistant_framework.inbox import Inbox
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.channels.contract import Address
    from messaging_llm_bot.channels.matrix.channel import MatrixChannel, in_thread, txn_id
    from messaging_llm_bot.channels.matrix.client import MatrixClient
    from messaging_llm_bot.channels.matrix.format import MatrixPart, text_content
    from messaging_llm_bot.channels.matrix.live import LIVE_PART

    world, model, bot = running.world, running.model, running.bot
    model.reset()
    model.enqueue({"content": json.dumps({"reply": "too late"}), "delay": 30})
    before = len(_answers(running))
    world.owner.send(running.room, "a question whose answer was being shown")
    assert model.wait_for_requests(1, timeout=30, path="/chat/completions")
    bot.kill()
    [item] = Inbox(Workspace(running.workspace)).pending()
    device = json.loads((running.workspace / "state/matrix/state.json").read_text(encoding="utf-8"))["device_id"]
    config = MatrixSettings(homeserver=world.server.url, user_id=world.bot.user_id, password=PASSWORD)

    async def the_killed_send() -> None:
        channel = MatrixChannel(MatrixClient(config, device))
        await channel.start()
        try:
            content = in_thread(text_content(MatrixPart("The answer so")), Address(running.room))
            await channel.client.send(running.room, content, txn_id(item.item_id, LIVE_PART))
        finally:
            await channel.stop(5)

    asyncio.run(the_killed_send())
    assert _answers(running)[before:] == ["The answer so"]
    model.reset()
    model.enqueue('{"reply": "The answer, whole, after the restart."}')
    bot.start()
    wait_until(lambda: not list((running.workspace / "state/inbox/pending").rglob("*.json")), 60, "the item done")
    answers = _answers(running)[before:]
    assert answers == ["The answer, whole, after the restart."], answers


def test_after_a_reload_names_another_owner_a_due_job_goes_to_the_room_opened_for_them(
    synapse: Synapse, tmp_path: Path
) -> None:
    """The owner is changed in the config and the old owner's ``/reload`` takes it; the new owner has never written
    to the bot. The bot opens a direct room with them (made, they invited, ``is_direct``, marked in the bot's
    ``m.direct``); once they join, a due job's run is there, and nothing of it reaches the old owner's rooms (it
    waited for the new owner's first message before: channels/matrix/service.py's ``_open_owner_room``)."""
    from datetime import UTC, datetime, timedelta

    from assistant_framework.jobs import JOBS_FILE
    from assistant_framework.workspace import Workspace

    world = MatrixWorld.registered(synapse)
    old, new, bot_id = world.owner, world.friend, world.bot.user_id
    ws = Workspace(tmp_path / "workspace")
    with FakeChatServer() as model:
        settings = {
            "llm": {"runners": [{"name": "fake", "base_url": model.base_url, "model": "fake-model"}], "stream": False},
            "runtime": {"timezone": "UTC", "log_level": "INFO", "shutdown_timeout_seconds": 2},
            "telegram": {"token": ""},
            "memory": {"enabled": False},
            "jobs": {"poll_seconds": 0.2},
            "matrix": {
                "enabled": True,
                "homeserver": synapse.url,
                "user_id": bot_id,
                "password_env": "MATRIX_TEST_PASSWORD",
                "allowed": [old.user_id, new.user_id],
            },
        }
        config = tmp_path / "config.json"
        config.write_text(json.dumps(settings), encoding="utf-8")
        old_room = world.direct_room()
        bot = BotProcess(config, ws.root, tmp_path / "bot.log", env={"MATRIX_TEST_PASSWORD": PASSWORD})
        with bot:
            bot.start()
            wait_until(lambda: _ready(bot), timeout=60, what="the bot process to log in")
            wait_until(lambda: world.joined(old_room), timeout=30, what="the bot to join the old owner's room")
            settings["matrix"]["owner"] = new.user_id
            config.write_text(json.dumps(settings), encoding="utf-8")
            old.send(old_room, "/reload")
            wait_until(lambda: old.texts(old_room, bot_id), timeout=30, what="the answer to /reload")
            created = (datetime.now(UTC) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
            job = {"id": "j1", "name": "water", "every_minutes": 60, "message": "Water the plants"}
            ws.write_json(JOBS_FILE, [{**job, "created_at": created}])
            wait_until(lambda: new.invites(), timeout=30, what="the new owner's invite")
            invited = new.invites()
            [room] = invited
            assert invited[room].get("is_direct") is True
            new.join(room)
            wait_until(lambda: new.texts(room, bot_id), timeout=30, what="the job's run in the new owner's room")
            assert new.texts(room, bot_id) == ["🗓 Water the plants"]
            assert world.bot.account_data("m.direct").get(new.user_id) == [room]
            assert world.bot.texts(old_room, bot_id) == old.texts(old_room, bot_id)  # the answer to /reload alone
            assert not old.invites()  # the room the old owner invited the bot to is theirs: none was opened
            assert bot.terminate() == 0
        assert not model.chat_requests
        assert "Traceback" not in bot.log_text()
