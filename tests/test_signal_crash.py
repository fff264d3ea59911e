"""The real bot process with Telegram and Signal side by side: both answered in one process, and a
SIGKILL with Signal messages in flight loses nothing (messages the bot had stored are answered after
the restart, messages sent while it was down wait on the daemon) and repeats at most a send in flight.

What no client can prevent, because signal-cli's HTTP event stream has no acknowledgement: an event
the daemon writes to the socket of a bot that just died (it notices a dead stream only when a write
fails, at the latest after two keep-alives, 15 s apart) is lost, as is one the bot read but had not
stored yet (docs/signal.md). So the kills here happen after every event is stored, while its turn
runs, and the messages "sent while the bot is down" are sent once the daemon noticed (keep-alives
every 0.1 s here).
"""

from __future__ import annotations

import json

import pytest

from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.signal_daemon import FakeSignalDaemon
from tests.signal_harness import BOT, wait_for

USERS = ["+15551110001", "+15551110002", "+15551110003"]
KILLS = 2
PER_ROUND = 9


def split_repeats(sent: list[str]) -> tuple[list[str], int]:
    """Drop immediate repeats (a reply sent again after a kill); returns (unique sequence, repeats)."""
    out: list[str] = []
    repeats = 0
    for text in sent:
        if out and out[-1] == text:
            repeats += 1
            continue
        out.append(text)
    return out, repeats


@pytest.mark.timeout(120)
def test_telegram_and_signal_in_one_process_survive_sigkill(tmp_path, bot_config):
    with (
        FakeBotAPI() as telegram_api,
        FakeSignalDaemon(BOT, keepalive_seconds=0.1) as daemon,
        FakeChatServer(latency=0.15) as model,
    ):
        model.set_handler(echo_reply)
        base = dict(
            bot_config,
            llm={
                **bot_config["llm"],
                "runners": [{"name": "fake", "base_url": model.base_url, "model": "fake-model", "timeout_seconds": 10}],
            },
        )
        config = write_bot_config(
            tmp_path / "config.json",
            base,
            telegram_api,
            allowed=[1],
            # queue: each message its own answer (with steer, the default, "telegram after the kills" joins the
            # replayed turn of "hello from telegram" when it is still running, and one reply answers both).
            runtime={"shutdown_timeout_seconds": 10, "busy_mode": "queue"},
            extra={"signal": {"enabled": True, "base_url": daemon.base_url, "account": BOT, "allowed": USERS}},
        )
        workspace = tmp_path / "workspace"
        seen_log = workspace / "state" / "inbox" / "seen.log"
        expected: dict[str, list[str]] = {user: [] for user in USERS}
        counter = 0

        def write_round(stored: bool) -> list[str]:
            """Send PER_ROUND Signal messages; with ``stored``, wait until the bot has stored each one."""
            nonlocal counter
            ids = []
            for _ in range(PER_ROUND):
                user = USERS[counter % len(USERS)]
                event = daemon.message(user, f"m{counter:03d} from {user}")
                env = event["envelope"]
                ids.append(f"sig:{env['sourceUuid']}:{env['timestamp']}")
                expected[user].append(f"re: m{counter:03d} from {user}")
                counter += 1
            if stored:

                def stored_all() -> bool:
                    text = seen_log.read_text() if seen_log.exists() else ""
                    return all(i in text for i in ids)

                wait_for(stored_all, timeout=20, what="stored messages")
            return ids

        with BotProcess(config, workspace, tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            daemon.wait_connected(20)
            telegram_api.send_message("hello from telegram", user_id=1)
            for _ in range(KILLS):
                write_round(stored=True)
                bot.kill()  # turns are running: the model answers one message per 0.15 s per chat
                wait_for(lambda: daemon.connected == 0, what="the daemon noticing the dead event stream")
                write_round(stored=False)  # these wait on the daemon while the bot is down
                bot.start().wait_ready()
            model.latency = 0.0  # the kills are over: the slow model kept turns running at each; the rest may be quick
            telegram_api.send_message("telegram after the kills", user_id=1)

            def all_answered() -> bool:
                return (
                    all(len(set(daemon_texts(daemon, u))) >= len(expected[u]) for u in USERS)
                    and len(set(sent_texts(telegram_api, 1))) >= 2
                )

            try:
                wait_for(all_answered, timeout=60, what="every message answered")
            except AssertionError:
                raise AssertionError(
                    f"not all answered: signal {[daemon_texts(daemon, u) for u in USERS]}, "
                    f"telegram {sent_texts(telegram_api, 1)}"
                ) from None
            assert bot.terminate() == 0, bot.run_log()[-3000:]

        assert set(sent_texts(telegram_api, 1)) == {"re: hello from telegram", "re: telegram after the kills"}
        total_repeats = 0
        for user in USERS:
            unique, repeats = split_repeats(daemon_texts(daemon, user))
            assert unique == expected[user], f"{user}: replies out of order or missing"
            total_repeats += repeats
        assert total_repeats <= KILLS * len(USERS), "more repeats than sends in flight"
        assert "Traceback" not in bot.log_text()


def daemon_texts(daemon: FakeSignalDaemon, user: str) -> list[str]:
    return [s["message"] for s in daemon.sent_to(user)]


@pytest.mark.timeout(60)
def test_signal_only_bot_answers_and_stops_cleanly_on_sigterm(tmp_path, bot_config):
    with FakeSignalDaemon(BOT) as daemon, FakeChatServer() as model:
        model.set_handler(echo_reply)
        base = dict(
            bot_config,
            llm={
                **bot_config["llm"],
                "runners": [{"name": "fake", "base_url": model.base_url, "model": "fake-model", "timeout_seconds": 10}],
            },
        )
        base["telegram"] = {"token": ""}
        config = tmp_path / "config.json"
        config.write_text(
            json.dumps(
                {
                    **base,
                    "memory": {"enabled": False},
                    "runtime": {**base["runtime"], "log_level": "INFO"},
                    "signal": {"enabled": True, "base_url": daemon.base_url, "account": BOT, "allowed": USERS[:1]},
                }
            )
        )
        with BotProcess(config, tmp_path / "workspace", tmp_path / "bot.log") as bot:
            bot.start()
            daemon.wait_connected(30)
            daemon.message(USERS[0], "ping")
            [sent] = daemon.wait_sent(1, timeout=20)
            assert sent["message"] == "re: ping"
            assert bot.terminate() == 0, bot.run_log()[-3000:]
            log = bot.log_text()
        assert "connected to the signal-cli event stream" in log and "Traceback" not in log
        assert "Serving @" not in log  # no Telegram without a token
