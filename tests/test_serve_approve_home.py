"""A served client's ``ask`` call with ``approve_in_chat`` is asked in the owner's home channel, whichever it is
(issue 48; conversation/job_router.py's ``ChannelJobs.ask_owner``): here Signal, the only channel, through the real
bot process (fake signal-cli daemon, fake model server) and the official ``openai`` client."""

from __future__ import annotations

import concurrent.futures
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.crash_bot import BotProcess
from tests.fakes.signal_daemon import FakeSignalDaemon
from tests.signal_harness import BOT, OWNER, signal_config
from tests.waiting import for_load, wait_until

TOKEN = "asker-token-" + "a" * 24
SERVE = {"clients": [{"name": "asker", "token_env": "ASKER_TOKEN", "skills": ["save_note"], "approve_in_chat": True}]}


def model(request: dict) -> str:
    """A save_note call for 'save a note NAME', the fed-back result in the reply."""
    last = request["messages"][-1]["content"]
    if last.startswith(("Result of skill", "Skill call")):
        return json.dumps({"reply": "after the call: " + " ".join(last.split("\n")[:2])})
    if found := re.match(r"save a note (\w+)", last):
        return json.dumps({"skill": "save_note", "args": {"name": found[1], "text": "x"}})
    return json.dumps({"reply": "ok"})


def questions(daemon: FakeSignalDaemon) -> list[str]:
    return [str(sent.get("message") or "") for sent in daemon.sent_to(OWNER) if "Confirm this action?" in str(sent)]


@pytest.mark.timeout(120)
def test_a_served_clients_ask_is_asked_in_the_owners_signal_chat(
    tmp_path: Path, bot_config: dict, chat_server: Any
) -> None:
    import openai  # here: its types cost every worker's collection half a second

    chat_server.set_handler(model)
    workspace = tmp_path / "workspace"
    with FakeSignalDaemon(BOT) as daemon:
        config = signal_config(bot_config, daemon, allowed=[OWNER])
        config["runtime"] = {**config["runtime"], "log_level": "INFO"}
        config.update(policy={"skills": {"save_note": "ask"}}, web={"enabled": True, "port": 0}, serve=SERVE)
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        with BotProcess(path, workspace, tmp_path / "bot.log", env={"ASKER_TOKEN": TOKEN}) as bot:
            bot.start()
            # Signal alone: no Telegram "Serving @" line; the owner can be asked once Signal joined the scheduler.
            wait_until(lambda: "signal joined the scheduler" in bot.run_log(), timeout=for_load(30), what="signal")
            port = re.search(r"web page: http://127\.0\.0\.1:(\d+)/", bot.run_log())
            assert port, bot.run_log()[-2000:]
            client = openai.OpenAI(
                base_url=f"http://127.0.0.1:{port.group(1)}/v1", api_key=TOKEN, max_retries=0, timeout=60
            )

            def create(text: str) -> str:
                answer = client.chat.completions.create(model="assistant", messages=[{"role": "user", "content": text}])
                return answer.choices[0].message.content or ""

            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                # Confirmed in Signal: the call runs and the client gets its result.
                pending = pool.submit(create, "save a note kept")
                wait_until(lambda: questions(daemon), timeout=30, what="the question in the owner's Signal chat")
                [question] = questions(daemon)
                assert "save_note" in question and "served client 'asker'" in question and "Reply yes" in question
                assert not (workspace / "notes" / "kept.md").exists()
                daemon.message(OWNER, "yes")
                assert "Result of skill 'save_note'" in pending.result(timeout=60)
                assert (workspace / "notes" / "kept.md").exists()

                # Declined in Signal: nothing is written, and the answer is no new turn of the owner's.
                asked = len(chat_server.chat_requests)
                pending = pool.submit(create, "save a note dropped")
                wait_until(lambda: len(questions(daemon)) == 2, timeout=30, what="the second question")
                daemon.message(OWNER, "no")
                declined = pending.result(timeout=60)
                assert "The owner did not confirm this call" in declined, declined
                assert not (workspace / "notes" / "dropped.md").exists()
            assert not any("no" == r["messages"][-1]["content"] for r in chat_server.chat_requests[asked:])
            assert bot.terminate() == 0
