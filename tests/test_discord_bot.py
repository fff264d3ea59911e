"""Issue 50's Discord guarantees through the real bot process (``python -m messaging_llm_bot``, Discord only)
against the fake Discord (tests/fakes/discord_api.py: the REST API and the gateway) and the fake model server: a
DM from the owner gets one answer (grown by edits while the model streams); a guild message without the bot's
mention is ignored (mention mode), one with it is answered in its channel; the same message id delivered twice is
answered once; a stranger gets a pairing code once and reaches no model; a 429 is waited out; a SIGKILL mid-stream
leaves one message, edited into the whole answer after the restart; a SIGKILL while a message is held (the inbox
cannot store) loses nothing: the restart reads it from the DM's history; a send Discord holds at a SIGKILL and
takes after it (the live message, a reply's second part) is not a second message after the restart (the
nonce). One bot process for the module."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.crash_bot import BotProcess
from tests.fakes.chat_server import FakeChatServer
from tests.waiting import held_until, wait_until

if (
    TYPE_CHECKING
):  # Imported where used: the fake Discord's aiohttp costs each xdist worker 0.1 s when collecting otherwise.
    from tests.fakes.discord_api import FakeDiscordAPI

OWNER = "80351110224678912"
STRANGER = "80351110224678913"
GUILD = "81384788765712384"
TOKEN = "MTA4.discord-test-token.0001"


@dataclass
class Running:
    bot: BotProcess
    discord: FakeDiscordAPI
    model: FakeChatServer
    workspace: Path


def _pending(workspace: Path) -> list[Path]:
    return list((workspace / "state/inbox/pending").rglob("*.json"))


def _write_config(
    folder: Path, discord: FakeDiscordAPI, model: FakeChatServer, allowed: tuple[str, ...] = (OWNER,)
) -> Path:
    config = {
        "llm": {
            "runners": [{"name": "fake", "base_url": model.base_url, "model": "fake-model", "timeout_seconds": 30}],
            "max_skill_rounds": 3,
            "retries_per_runner": 0,
            "stream": True,
        },
        "runtime": {"timezone": "Europe/Berlin", "log_level": "INFO", "shutdown_timeout_seconds": 2},
        "telegram": {"token": ""},
        "memory": {"enabled": False},
        "discord": {
            "enabled": True,
            "bot_token_env": "DISCORD_TEST_TOKEN",
            "allowed": list(allowed),
            "base_url": discord.base_url,
            "edit_interval_seconds": 0.1,  # the platform's 1 s is waited out by nothing here
        },
    }
    path = folder / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    from tests.fakes.discord_api import FakeDiscordAPI

    folder = tmp_path_factory.mktemp("discord-bot")
    with FakeChatServer() as model, FakeDiscordAPI(token=TOKEN) as discord:
        discord.add_user(OWNER)
        path = _write_config(folder, discord, model)
        bot = BotProcess(path, folder / "workspace", folder / "bot.log", env={"DISCORD_TEST_TOKEN": TOKEN})
        with bot:
            bot.start()
            wait_until(lambda: _connected(bot), timeout=60, what="the bot process to connect to the gateway")
            yield Running(bot, discord, model, folder / "workspace")
        log = bot.log_text()
        assert TOKEN not in log  # the token from the environment is never logged
        assert "Traceback" not in log


def _shown(discord: FakeDiscordAPI, dm: str, before: int, count: int) -> Callable[[], bool]:
    """Whether the answer's message (the first in ``dm`` after ``before`` messages) was shown ``count`` times:
    sent, then edited by the stream."""

    def enough() -> bool:
        mine = discord.posted(dm)[before:]
        return bool(mine) and len(mine[0]["history"]) >= count

    return enough


def _connected(bot: BotProcess) -> bool:
    if bot.proc is not None and bot.proc.poll() is not None:
        raise AssertionError(f"the bot exited with {bot.proc.returncode}:\n{bot.run_log()[-3000:]}")
    return re.search(r"discord: connected to the gateway", bot.run_log()) is not None


def test_the_bot_identifies_with_the_message_content_intent(running: Running) -> None:
    [identify] = running.discord.identified
    assert identify["token"] == TOKEN
    assert identify["intents"] & (1 << 15)  # message content: guild messages that mention the bot are read
    assert identify["intents"] & (1 << 12)  # direct messages


def test_a_dm_from_the_owner_gets_one_answer_grown_by_edits(running: Running) -> None:
    discord, model = running.discord, running.model
    model.reset()
    dm = discord.dms[OWNER]
    answer = "Paris is the capital of France, and its largest city by far."
    words = answer.split(" ")
    chunks = ['{"reply": "'] + [w + " " for w in words[:-1]] + [words[-1], '"}']
    before = len(discord.posted(dm))
    # Held before "of" until the first words are sent, before "city" until an edit showed more.
    gate = held_until({5: _shown(discord, dm, before, 1), 10: _shown(discord, dm, before, 2)})
    model.enqueue({"content": '{"reply": "' + answer + '"}', "stream_chunks": chunks, "chunk_gate": gate})
    discord.dm(OWNER, "What is the capital of France?")
    wait_until(lambda: discord.posted(dm) and not _pending(running.workspace), timeout=30, what="the answer")
    [message] = discord.posted(dm)
    assert message["content"] == answer
    assert len(discord.calls("POST /channels/{channel_id}/messages")) == 1  # one message ...
    assert len(message["history"]) >= 3  # ... shown growing: sent, edited while streaming, then final
    assert all(answer.startswith(shown.removesuffix(" ▍").strip()) for shown in message["history"])
    assert len(model.chat_requests) == 1
    assert "What is the capital of France?" in str(model.chat_requests[0]["messages"][-1])


def test_a_guild_message_without_a_mention_is_ignored_and_one_with_it_answered(running: Running) -> None:
    discord, model = running.discord, running.model
    model.reset()
    channel = discord.add_channel(GUILD, "general")
    model.enqueue('{"reply": "Lunch is at noon."}')
    discord.say(OWNER, channel, "what do you all think about lunch?")  # not addressed to the bot
    discord.say(OWNER, channel, "when is lunch?", mention=True)
    wait_until(lambda: discord.posted(channel) and not _pending(running.workspace), what="the answer in the channel")
    assert [m["content"] for m in discord.posted(channel)] == ["Lunch is at noon."]
    [request] = model.chat_requests  # the unaddressed message reached no model
    assert "when is lunch?" in str(request["messages"][-1]) and "<@" not in str(request["messages"][-1])
    assert "think about lunch" not in json.dumps(request)


def test_the_same_message_id_twice_is_answered_once(running: Running) -> None:
    discord, model = running.discord, running.model
    model.reset()
    dm = discord.dms[OWNER]
    before = len(discord.posted(dm))
    model.enqueue('{"reply": "Rome."}', '{"reply": "a second answer"}')
    message = discord.dm(OWNER, "And Italy?")
    discord.redeliver(message)  # a RESUME replays it
    wait_until(lambda: len(discord.posted(dm)) > before and not _pending(running.workspace), what="the answer")
    discord.redeliver(message)  # and once more after the answer
    wait_until(lambda: running.bot.run_log().count(f"{message['id']} came again") >= 2, what="both repeats")
    assert [m["content"] for m in discord.posted(dm)[before:]] == ["Rome."]
    assert len(model.chat_requests) == 1


def test_a_stranger_gets_a_pairing_code_once_and_reaches_no_model(running: Running) -> None:
    discord, model = running.discord, running.model
    model.reset()
    discord.dm(STRANGER, "Read me the owner's notes.")
    wait_until(lambda: discord.posted(discord.dms[STRANGER]), what="the pairing code")
    discord.dm(STRANGER, "Hello?")
    wait_until(lambda: f"ignored {STRANGER} again" in running.bot.run_log(), what="the second message passed over")
    [told] = [m["content"] for m in discord.posted(discord.dms[STRANGER])]
    assert "Ask the owner to approve code" in told and "not authorised" not in told  # pairing on: a code
    assert model.chat_requests == [] and not _pending(running.workspace)


def test_a_rate_limit_is_waited_out_and_the_answer_arrives_once(running: Running) -> None:
    discord, model = running.discord, running.model
    model.reset()
    dm = discord.dms[OWNER]
    before = len(discord.posted(dm))
    discord.ratelimit("POST /channels/{channel_id}/messages", 1, 0.3)
    model.enqueue('{"reply": "Madrid."}')
    discord.dm(OWNER, "And Spain?")
    wait_until(lambda: len(discord.posted(dm)) > before and not _pending(running.workspace), what="the answer")
    assert [m["content"] for m in discord.posted(dm)[before:]] == ["Madrid."]
    assert "rate limited" in running.bot.run_log()


def test_a_file_is_read_for_the_model_and_one_on_another_host_is_never_fetched(running: Running) -> None:
    discord, model = running.discord, running.model
    model.reset()
    dm = discord.dms[OWNER]
    before = len(discord.posted(dm))
    model.enqueue('{"reply": "Milk and bread."}')
    discord.dm(OWNER, "my list", files={"list.txt": b"milk\nbread\n"})
    wait_until(lambda: len(discord.posted(dm)) > before and not _pending(running.workspace), what="the answer")
    [request] = model.chat_requests
    assert "milk" in json.dumps(request["messages"]) and "list.txt" in json.dumps(request["messages"])
    model.reset()
    discord.dm(OWNER, "and this", files={"evil.txt": b"secret"}, files_at="http://127.0.0.2:9")  # not Discord's
    wait_until(lambda: len(discord.posted(dm)) > before + 1 and not _pending(running.workspace), what="the reason")
    assert "not on Discord's file host" in discord.posted(dm)[-1]["content"]
    assert model.chat_requests == []  # the only file could not be fetched: answered with the reason, no turn


def test_a_command_in_the_dm_is_answered_without_the_model(running: Running) -> None:
    discord, model = running.discord, running.model
    model.reset()
    dm = discord.dms[OWNER]
    before = len(discord.posted(dm))
    discord.dm(OWNER, "/stop")  # nothing is being written
    wait_until(lambda: len(discord.posted(dm)) > before, what="the answer to /stop")
    discord.dm(OWNER, "/jobs")
    wait_until(lambda: len(discord.posted(dm)) > before + 1, what="the answer to /jobs")
    stop, jobs = [m["content"] for m in discord.posted(dm)[before:]]
    assert "nothing to stop" in stop and "job" in jobs.lower()
    assert model.chat_requests == [] and not _pending(running.workspace)


def test_a_crash_mid_stream_leaves_one_message_with_the_whole_answer(running: Running) -> None:
    """SIGKILL while the answer streams: the restart takes the live message over (the ledger recorded its id)
    and edits it into the whole answer; no second message, the partial one not left behind."""
    discord, model, bot = running.discord, running.model, running.bot
    model.reset()
    dm = discord.dms[OWNER]
    before = len(discord.posted(dm))
    answer = "Lisbon is the capital of Portugal, on the Tagus river where it meets the Atlantic."
    words = answer.split(" ")
    slow = ['{"reply": "'] + [w + " " for w in words[:-1]] + [words[-1], '"}']
    killed = threading.Event()
    # Held before "is" until the first word is sent, then before "capital" until the bot is killed mid-stream.
    gate = held_until({2: _shown(discord, dm, before, 1), 4: killed.is_set})
    model.enqueue(
        {"content": '{"reply": "' + answer + '"}', "stream_chunks": slow, "chunk_gate": gate},
        '{"reply": "' + answer + '"}',  # the restart's turn
    )
    discord.dm(OWNER, "What is the capital of Portugal?")

    # sent and edited once: its id is in the ledger (recorded before the first edit)
    growing = _shown(discord, dm, before, 2)
    wait_until(growing, timeout=30, what="the answer to stream")
    bot.kill()
    killed.set()
    [partial] = discord.posted(dm)[before:]
    assert partial["content"] != answer  # killed mid-stream
    bot.start()
    wait_until(lambda: _connected(bot), timeout=60, what="the restarted bot to connect to the gateway")
    wait_until(lambda: not _pending(running.workspace), timeout=30, what="the replayed answer")
    [message] = discord.posted(dm)[before:]  # one message: the partial one edited, none posted again
    assert message["id"] == partial["id"] and message["content"] == answer
    assert len(model.chat_requests) == 2


def test_a_crash_while_a_message_is_held_loses_nothing(running: Running) -> None:
    """SIGKILL while a message waits in memory for an inbox that cannot store (the gateway never sends it again):
    the catch-up cursor never moved past it, so the restart reads it from the DM's history and answers it once."""
    from assistant_framework.workspace import Workspace
    from tests.inbox_faults import break_inbox, repair_inbox

    discord, model, bot = running.discord, running.model, running.bot
    model.reset()
    model.enqueue('{"reply": "The first answer."}', '{"reply": "The held one answered."}')
    dm = discord.dms[OWNER]
    discord.dm(OWNER, "a message before the crash")  # the DM is one the bot has taken a message in
    wait_until(lambda: "The first answer." in _texts(discord, dm), timeout=30, what="the first answer")
    wait_until(lambda: not _pending(running.workspace), timeout=30, what="the first message completed")
    pending = break_inbox(Workspace(running.workspace))
    discord.dm(OWNER, "held when the bot crashes")
    wait_until(lambda: any("I cannot save messages" in t for t in _texts(discord, dm)), 30, "the held notice")
    bot.kill()
    repair_inbox(pending)
    bot.start()
    wait_until(lambda: _connected(bot), timeout=60, what="the restarted bot to connect to the gateway")
    wait_until(lambda: "The held one answered." in _texts(discord, dm), timeout=30, what="the held message")
    wait_until(lambda: not _pending(running.workspace), timeout=30, what="the held message completed")
    assert _texts(discord, dm).count("The held one answered.") == 1
    asked = [str(r["messages"][-1]) for r in model.chat_requests]
    assert len(asked) == 2 and "held when the bot crashes" in asked[1], asked


def _texts(discord: FakeDiscordAPI, dm: str) -> list[str]:
    return [m["content"] for m in discord.posted(dm)]


MESSAGES = "POST /channels/{channel_id}/messages"


def _restart(
    running: Running, reached: threading.Event, wait_landed: Callable[[], bool], killed: threading.Event | None = None
) -> None:
    """SIGKILL while Discord holds the send, the send then taken (the message made, its answer never read, the
    ledger without it), the bot started again until its inbox is empty."""
    bot = running.bot
    bot.kill()
    if killed is not None:
        killed.set()
    reached.set()
    wait_until(wait_landed, timeout=30, what="the held send to land after the kill")
    bot.start()
    wait_until(lambda: _connected(bot), timeout=60, what="the restarted bot to connect to the gateway")
    wait_until(lambda: not _pending(running.workspace), timeout=30, what="the replayed answer")


def test_a_live_message_that_reached_discord_just_before_a_kill_is_not_sent_twice(running: Running) -> None:
    """SIGKILL while the first (live) message's send is held by Discord: it lands after the kill, its id never
    recorded. The restarted turn sends its live message again with the same nonce (the item's): Discord gives
    that message back, it is edited into the whole answer, and no second message is made."""
    discord, model = running.discord, running.model
    model.reset()
    dm = discord.dms[OWNER]
    before, calls = len(discord.posted(dm)), len(discord.calls(MESSAGES))
    answer = "Vienna is the capital of Austria, on the Danube."
    words = answer.split(" ")
    slow = ['{"reply": "'] + [w + " " for w in words[:-1]] + [words[-1], '"}']
    killed = threading.Event()
    gate = held_until({3: killed.is_set})  # the first words shown, the rest only after the kill
    model.enqueue(
        {"content": '{"reply": "' + answer + '"}', "stream_chunks": slow, "chunk_gate": gate},
        '{"reply": "' + answer + '"}',  # the restart's turn asks again
    )
    reached = discord.hold_next(MESSAGES)
    discord.dm(OWNER, "What is the capital of Austria?")
    wait_until(lambda: len(discord.calls(MESSAGES)) > calls, timeout=30, what="the live message's send")
    _restart(running, reached, lambda: len(discord.posted(dm)) > before, killed)
    shown = discord.posted(dm)[before:]
    assert len(shown) == 1, [(m["content"], m.get("nonce")) for m in shown]
    [message] = shown  # the one made before the kill, edited into the answer
    assert message["content"] == answer
    assert len(discord.calls(MESSAGES)) == calls + 2  # sent twice, made once
    assert len(model.chat_requests) == 2


def test_a_reply_part_that_reached_discord_just_before_a_kill_is_not_sent_twice(running: Running) -> None:
    """A reply of two messages: the second's send is held, the bot killed, then the send lands. The ledger has
    the first part (the live message edited into it), not the second: the restart sends the second again with
    its nonce, and Discord answers with the message it made. Two messages, each once."""
    discord, model = running.discord, running.model
    model.reset()
    dm = discord.dms[OWNER]
    before, calls = len(discord.posted(dm)), len(discord.calls(MESSAGES))
    first, second = "Rivers of Europe. " * 110, "The Danube flows through ten countries."
    answer = first.strip() + "\\n\\n" + second  # over 2,000 characters: two messages
    model.enqueue('{"reply": "' + answer + '"}')
    reached = discord.hold_next(MESSAGES, skip=1)  # the live message goes out, the second part is held
    discord.dm(OWNER, "Tell me about rivers.")
    wait_until(lambda: len(discord.calls(MESSAGES)) > calls + 1, timeout=30, what="the second part's send")
    _restart(running, reached, lambda: len(discord.posted(dm)) > before + 1)
    texts = [m["content"] for m in discord.posted(dm)[before:]]
    assert texts == [first.strip(), second]
    assert len(discord.calls(MESSAGES)) == calls + 3  # the second part sent twice, made once
    assert len(model.chat_requests) == 1  # the reply was in the ledger: the model is not asked again


def test_a_run_left_in_the_inbox_once_no_owner_is_set_is_dropped_unsent(tmp_path: Path) -> None:
    """A job's run was queued for the owner's DM, then the allowlist was emptied (no owner): a run is the owner's
    turn in the owner's chat, so it is not run for user "" (it was): nothing reaches the model or the DM, it is
    logged and completed (conversation/item_turns.py's ``run_job``, the one check of every channel)."""
    from assistant_framework.inbox import Inbox
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.conversation.job_runs import JobRun
    from tests.fakes.discord_api import FakeDiscordAPI

    with FakeChatServer() as model, FakeDiscordAPI(token=TOKEN) as discord:
        dm = discord.add_user(OWNER)
        planned = "2026-03-02T07:30:00+00:00"
        run = JobRun(f"j1:{planned}", "j1", "news", "prompt", "News?", planned, False, "UTC")
        Inbox(Workspace(tmp_path / "workspace")).accept(f"job:j1:{planned}", f"dc:{dm}", run.payload())
        config = _write_config(tmp_path, discord, model, allowed=())
        with BotProcess(config, tmp_path / "workspace", tmp_path / "bot.log", env={"DISCORD_TEST_TOKEN": TOKEN}) as bot:
            bot.start()
            wait_until(lambda: _connected(bot), timeout=60, what="the bot process to connect to the gateway")
            wait_until(lambda: not _pending(tmp_path / "workspace"), timeout=30, what="the run's item completed")
        assert not model.chat_requests and discord.posted(dm) == []
        log = bot.log_text()
        assert "cannot run (no owner chat); dropped" in log and "Traceback" not in log


def test_after_a_reload_names_another_owner_a_due_job_goes_to_the_new_owners_dm_not_the_old(tmp_path: Path) -> None:
    """The owner is changed in the config and the old owner's ``/reload`` takes it; then a job is due: its run
    goes to the new owner's DM, opened for them (conversation/owner_dm.py), and the old owner's DM gets nothing of
    it (it did: the DM opened at the start was kept until a restart)."""
    from datetime import UTC, datetime, timedelta

    from assistant_framework.jobs import JOBS_FILE
    from assistant_framework.workspace import Workspace
    from tests.fakes.discord_api import FakeDiscordAPI

    new_owner = "80351110224678999"
    ws = Workspace(tmp_path / "workspace")
    with FakeChatServer() as model, FakeDiscordAPI(token=TOKEN) as discord:
        old_dm, new_dm = discord.add_user(OWNER), discord.add_user(new_owner)
        config = _write_config(tmp_path, discord, model)
        settings = json.loads(config.read_text(encoding="utf-8"))
        settings["jobs"] = {"poll_seconds": 0.2}
        config.write_text(json.dumps(settings), encoding="utf-8")
        with BotProcess(config, ws.root, tmp_path / "bot.log", env={"DISCORD_TEST_TOKEN": TOKEN}) as bot:
            bot.start()
            wait_until(lambda: _connected(bot), timeout=60, what="the bot process to connect to the gateway")
            settings["discord"]["allowed"] = [new_owner]
            config.write_text(json.dumps(settings), encoding="utf-8")
            discord.dm(OWNER, "/reload")
            wait_until(lambda: discord.posted(old_dm), timeout=30, what="the answer to /reload")
            told = len(discord.posted(old_dm))
            created = (datetime.now(UTC) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
            job = {"id": "j1", "name": "water", "every_minutes": 60, "message": "Water the plants"}
            ws.write_json(JOBS_FILE, [{**job, "created_at": created}])
            wait_until(lambda: discord.posted(new_dm), timeout=30, what="the job's run in the new owner's DM")
        assert [m["content"] for m in discord.posted(new_dm)] == ["🗓 Water the plants"]
        assert len(discord.posted(old_dm)) == told and not model.chat_requests
        assert "Traceback" not in bot.log_text()
