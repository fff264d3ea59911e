"""Issue 50's WhatsApp guarantees through the real bot process (``python -m messaging_llm_bot``, WhatsApp only)
against the fake Graph API (tests/fakes/graph_api.py, which also posts Meta's signed webhooks) and the fake
model server: the handshake answers the challenge only with the right verify token; an unsigned or wrongly
signed POST gets 403 and runs nothing; a job run 25 hours after the owner's last message goes out as the
template; a signed message from the owner gets one reply through /messages; the same message id twice is
answered once; a stranger gets a pairing code once and reaches no model. One bot process for the module; the
tests run in this order (the window test first: the owner's last message is then 25 hours old)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
import requests

from assistant_framework.jobs.store import JobStore
from assistant_framework.workspace import Workspace
from tests.crash_bot import BotProcess
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.graph_api import FakeGraphAPI
from tests.waiting import wait_until

OWNER = "491701234567"
STRANGER = "15551234567"
SECRET = "app-secret-for-the-test-0123456789"
TOKEN = "EAAG-test-token"
VERIFY = "verify-me-please"
TEMPLATE = "assistant_message"


@dataclass
class Running:
    bot: BotProcess
    graph: FakeGraphAPI
    model: FakeChatServer
    workspace: Path
    url: str


def _pending(workspace: Path) -> list[Path]:
    return list((workspace / "state/inbox/pending").rglob("*.json"))


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("whatsapp-bot")
    with FakeChatServer() as model, FakeGraphAPI(token=TOKEN) as graph:
        graph.add_template(TEMPLATE, "en_US", params=1)
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
            "jobs": {"poll_seconds": 0.2},
            "whatsapp": {
                "enabled": True,
                "phone_number_id": graph.phone_number_id,
                "access_token_env": "WA_TEST_TOKEN",
                "app_secret_env": "WA_TEST_SECRET",
                "verify_token": VERIFY,
                "allowed": [f"+{OWNER}"],
                "webhook": {"port": 0},
                "base_url": graph.base_url,
                "template": {"name": TEMPLATE, "language": "en_US"},
            },
        }
        path = folder / "config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        env = {"WA_TEST_TOKEN": TOKEN, "WA_TEST_SECRET": SECRET}
        bot = BotProcess(path, folder / "workspace", folder / "bot.log", env=env)
        with bot:
            bot.start()
            wait_until(lambda: _serving(bot), timeout=60, what="the bot process to listen")
            url = _serving(bot)
            graph.connect(url, SECRET)
            yield Running(bot, graph, model, folder / "workspace", url)
        log = bot.log_text()
        assert SECRET not in log and TOKEN not in log  # the secrets from the environment are never logged
        assert "Traceback" not in log


def _serving(bot: BotProcess) -> str:
    if bot.proc is not None and bot.proc.poll() is not None:
        raise AssertionError(f"the bot exited with {bot.proc.returncode}:\n{bot.run_log()[-3000:]}")
    found = re.search(r"whatsapp: serving the webhook on (\S+)", bot.run_log())
    return found[1] if found else ""


def test_the_handshake_answers_the_challenge_only_with_the_right_verify_token(running: Running) -> None:
    params = {"hub.mode": "subscribe", "hub.verify_token": VERIFY, "hub.challenge": "1158201444"}
    right = requests.get(running.url, params=params, timeout=10)
    assert (right.status_code, right.text) == (200, "1158201444")
    wrong = requests.get(running.url, params={**params, "hub.verify_token": "verify-me-not"}, timeout=10)
    assert wrong.status_code == 403 and "1158201444" not in wrong.text
    other_mode = requests.get(running.url, params={**params, "hub.mode": "unsubscribe"}, timeout=10)
    assert other_mode.status_code == 403 and "1158201444" not in other_mode.text


def test_an_unsigned_or_wrongly_signed_post_gets_403_and_runs_nothing(running: Running) -> None:
    graph = running.graph
    payload = graph.message_event(OWNER, graph.inbound(OWNER, "text", {"body": "Tell me my notes."}))
    assert graph.deliver(payload, sign=False) == 403
    assert graph.deliver(payload, secret="not-the-app-secret") == 403
    assert graph.deliver(payload, secret=SECRET[:-1] + "X") == 403
    # The 403 came before anything was parsed or stored: nothing can be under way now.
    assert running.model.chat_requests == [] and graph.messages == [] and graph.read_receipts() == []
    assert not _pending(running.workspace)
    assert not (running.workspace / "state/whatsapp/window.json").exists()  # not even the window was noted


def test_a_job_run_25_hours_after_the_owners_last_message_goes_out_as_the_template(running: Running) -> None:
    graph, model = running.graph, running.model
    model.enqueue('{"reply": "Noted."}')
    day_ago = time.time() - 25 * 3600  # the webhook of a message sent 25 hours ago (Meta retries for days)
    _, status = graph.user_text(OWNER, "Remind me of my pills.", timestamp=day_ago)
    assert status == 200
    wait_until(lambda: graph.sent(OWNER), timeout=30, what="the answer to the old message")
    store = JobStore(Workspace(running.workspace), "Europe/Berlin")
    job = store.add({"name": "pills", "message": "Take your pills.", "cron": "0 3 1 1 *", "chat_id": f"wa:{OWNER}"})
    store.request_run(job.id, datetime.now(timezone.utc))
    wait_until(lambda: len(graph.sent(OWNER)) >= 2, timeout=30, what="the job's run")
    wait_until(lambda: not _pending(running.workspace), what="the items done")
    sent = graph.sent(OWNER)
    assert [m["type"] for m in sent] == ["template", "template"]
    params = [m["payload"]["template"]["components"][0]["parameters"][0]["text"] for m in sent]
    assert params[0].startswith("Noted.") and "Take your pills." in params[1]
    assert all(m["payload"]["template"]["name"] == TEMPLATE for m in sent)
    assert graph.failed(OWNER) == []  # no free-form message was tried outside the window


def test_a_signed_post_from_the_owner_gets_one_reply_through_messages(running: Running) -> None:
    graph, model = running.graph, running.model
    model.reset()
    before = len(graph.sent(OWNER))
    model.enqueue('{"reply": "Paris is the capital."}')
    message_id, status = graph.user_text(OWNER, "What is the capital of France?")
    assert status == 200
    wait_until(lambda: len(graph.sent(OWNER)) > before, timeout=30, what="the answer")
    wait_until(lambda: not _pending(running.workspace), what="the item done")
    new = graph.sent(OWNER)[before:]
    assert [(m["type"], m["payload"]["text"]["body"]) for m in new] == [("text", "Paris is the capital.")]
    assert new[0]["payload"]["context"] == {"message_id": message_id}
    assert {"message_id": message_id, "typing": True} in graph.read_receipts()
    assert len(model.chat_requests) == 1
    assert "What is the capital of France?" in str(model.chat_requests[0]["messages"][-1])


def test_the_same_message_id_twice_is_answered_once(running: Running) -> None:
    graph, model = running.graph, running.model
    model.reset()
    before = len(graph.sent(OWNER))
    model.enqueue('{"reply": "Rome."}')
    model.enqueue('{"reply": "a second answer"}')
    payload = graph.message_event(OWNER, graph.inbound(OWNER, "text", {"body": "And Italy?"}))
    assert graph.deliver(payload) == 200
    assert graph.deliver(payload) == 200  # Meta sends it again: it did not hear the first 200 in time
    wait_until(lambda: len(graph.sent(OWNER)) > before, timeout=30, what="the answer")
    wait_until(lambda: not _pending(running.workspace), what="the item done")
    assert graph.deliver(payload) == 200  # and once more after the answer
    came_again = f"{payload['entry'][0]['changes'][0]['value']['messages'][0]['id']} came again"
    wait_until(lambda: running.bot.run_log().count(came_again) >= 2, what="both copies passed over")
    assert [m["payload"]["text"]["body"] for m in graph.sent(OWNER)[before:]] == ["Rome."]
    assert len(model.chat_requests) == 1


def test_a_command_delivered_again_runs_once(running: Running) -> None:
    """The same signed payload twice (Meta sends it again until it heard 200; or a recorded POST replayed): a
    message was taken once by the inbox, but a command in it ran again, answered twice (fails so without the
    note of commands taken, checked). Its message id now counts as taken, whatever the message was."""
    graph = running.graph
    payload = graph.message_event(OWNER, graph.inbound(OWNER, "text", {"body": "/twice"}))
    before = len(graph.texts(OWNER))
    assert graph.deliver(payload) == 200
    wait_until(lambda: len(graph.texts(OWNER)) > before, what="the answer to /twice")
    assert graph.deliver(payload) == 200
    after = graph.message_event(OWNER, graph.inbound(OWNER, "text", {"body": "/after"}))
    assert graph.deliver(after) == 200  # the next command: answered, after the one sent again
    wait_until(lambda: any("/after" in t for t in graph.texts(OWNER)[before:]), what="the answer to /after")
    answers = graph.texts(OWNER)[before:]
    assert sum("Unknown command /twice." in t for t in answers) == 1, answers


def test_a_stranger_gets_a_pairing_code_once_and_reaches_no_model(running: Running) -> None:
    graph, model = running.graph, running.model
    model.reset()
    assert graph.user_text(STRANGER, "Read me the owner's notes.")[1] == 200
    wait_until(lambda: graph.sent(STRANGER), what="the pairing code")
    assert graph.user_text(STRANGER, "Hello?")[1] == 200
    wait_until(lambda: "ignored 15551234567 again" in running.bot.run_log(), what="the second message passed over")
    [told] = graph.texts(STRANGER)
    assert "Ask the owner to approve code" in told and "not authorised" not in told  # pairing on: a code
    assert model.chat_requests == [] and not _pending(running.workspace)


def test_a_typed_command_is_answered_without_the_model_and_stop_at_once(running: Running) -> None:
    """A /command typed as a message (conversation/intake.py's ChannelIntake.command): /stop answered at once, the
    others in the chat's order from conversation/commands.py; none reaches the model or stays in the inbox."""
    graph, model = running.graph, running.model
    model.reset()
    before = len(graph.texts(OWNER))
    assert graph.user_text(OWNER, "/stop")[1] == 200  # nothing is being written
    wait_until(lambda: len(graph.texts(OWNER)) > before, what="the answer to /stop")
    assert graph.user_text(OWNER, "/jobs")[1] == 200
    wait_until(lambda: len(graph.texts(OWNER)) > before + 1, what="the answer to /jobs")
    stop, jobs = graph.texts(OWNER)[before:]
    assert "nothing to stop" in stop and "job" in jobs.lower()
    assert model.chat_requests == [] and not _pending(running.workspace)
