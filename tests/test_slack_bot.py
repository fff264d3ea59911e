"""Issue 50's Slack guarantees through the real bot process (``python -m messaging_llm_bot``, Slack only) against
the fake Slack Web API (tests/fakes/slack_api.py, which also posts Slack's signed Events API requests) and the
fake model server: a signed request older than five minutes is refused and runs nothing; an unsigned or wrongly
signed one too; the url_verification challenge is answered; a DM from the owner gets one streamed answer (one
message, grown by chat.update); a retry of the same event is answered once; a stranger gets a pairing code once;
a SIGKILL mid-stream leaves one message, edited into the whole answer after the restart; a bot token Slack refuses
(auth.test's invalid_auth) ends the start with one sentence naming slack.bot_token_env and exit code 1.
Slash commands: a signed one is acknowledged empty and answered in its chat (an owner-only one typed in a channel
refused there), a wrongly signed one refused 401, a stranger's given the pairing code once, and the owner's
/pair lets them in. One bot process for the module."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.crash_bot import BotProcess
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.slack_api import FakeSlackAPI
from tests.waiting import held_until, wait_until

OWNER = "U0OWNER001"
STRANGER = "U0STRANGE1"
SECRET = "slack-signing-secret-for-the-test-0123"
TOKEN = "xoxb-test-token-0001"


@dataclass
class Running:
    bot: BotProcess
    slack: FakeSlackAPI
    model: FakeChatServer
    workspace: Path
    url: str


def _pending(workspace: Path) -> list[Path]:
    return list((workspace / "state/inbox/pending").rglob("*.json"))


def _write_config(
    folder: Path, slack: FakeSlackAPI, model: FakeChatServer, allowed: tuple[str, ...] = (OWNER,)
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
        "slack": {
            "enabled": True,
            "bot_token_env": "SLACK_TEST_TOKEN",
            "signing_secret_env": "SLACK_TEST_SECRET",
            "allowed": list(allowed),
            "webhook": {"port": 0},
            "base_url": slack.base_url,
            "edit_interval_seconds": 0.1,  # the platform's 1 s is waited out by nothing here
        },
    }
    path = folder / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("slack-bot")
    with FakeChatServer() as model, FakeSlackAPI(token=TOKEN) as slack:
        slack.add_user(OWNER)
        path = _write_config(folder, slack, model)
        env = {"SLACK_TEST_TOKEN": TOKEN, "SLACK_TEST_SECRET": SECRET}
        bot = BotProcess(path, folder / "workspace", folder / "bot.log", env=env)
        with bot:
            bot.start()
            wait_until(lambda: _serving(bot), timeout=60, what="the bot process to listen")
            url = _serving(bot)
            slack.connect(url, SECRET)
            yield Running(bot, slack, model, folder / "workspace", url)
        log = bot.log_text()
        assert SECRET not in log and TOKEN not in log  # the secrets from the environment are never logged
        assert "Traceback" not in log


def _shown(slack: FakeSlackAPI, dm: str, before: int, count: int) -> Callable[[], bool]:
    """Whether the answer's message (the first in ``dm`` after ``before`` messages) was shown ``count`` times:
    posted, then updated by the stream."""

    def enough() -> bool:
        mine = slack.posted(dm)[before:]
        return bool(mine) and len(mine[0]["history"]) >= count

    return enough


def _serving(bot: BotProcess) -> str:
    if bot.proc is not None and bot.proc.poll() is not None:
        raise AssertionError(f"the bot exited with {bot.proc.returncode}:\n{bot.run_log()[-3000:]}")
    found = re.search(r"slack: serving the Events API on (\S+)", bot.run_log())
    return found[1] if found else ""


def test_a_bot_token_slack_refuses_ends_the_start_with_one_sentence_and_exit_1(
    running: Running, tmp_path: Path
) -> None:
    wrong = "xoxb-test-token-wrong"
    env = {"SLACK_TEST_TOKEN": wrong, "SLACK_TEST_SECRET": SECRET}
    with BotProcess(
        _write_config(tmp_path, running.slack, running.model), tmp_path / "ws", tmp_path / "bot.log", env
    ) as bot:
        bot.start()
        # bounded: the process ends at once; a bot that serves anyway fails here, not at the suite's timeout
        wait_until(
            lambda: bot.proc is not None and (bot.proc.poll() is not None or "serving the Events API" in bot.run_log()),
            timeout=60,
            what="the bot to exit or serve",
        )
        assert "serving the Events API" not in bot.run_log(), bot.run_log()[-2000:]
        assert bot.wait(10) == 1
    log = bot.log_text()
    assert "slack: cannot start: Slack refused the bot token, slack.bot_token_env (auth.test: invalid_auth)" in log
    assert "Traceback" not in log and wrong not in log


def test_a_signed_request_older_than_five_minutes_is_refused_and_runs_nothing(running: Running) -> None:
    slack = running.slack
    payload = slack.dm(OWNER, "What are my notes?")
    old = slack.deliver(payload, timestamp=time.time() - 6 * 60)  # rightly signed, but six minutes old
    assert old.status_code == 401 and "five minutes" in old.text
    assert slack.deliver(payload, sign=False).status_code == 401
    assert slack.deliver(payload, secret=SECRET[:-1] + "X").status_code == 401
    assert slack.deliver(payload, timestamp=time.time() + 6 * 60).status_code == 401  # from the future too
    # Refused before anything was parsed or stored: nothing is under way.
    assert running.model.chat_requests == [] and slack.calls("chat.postMessage") == []
    assert not _pending(running.workspace)


def test_the_url_verification_challenge_is_answered_only_when_signed(running: Running) -> None:
    challenge = {
        "token": "x",
        "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        "type": "url_verification",
    }
    right = running.slack.deliver(challenge)
    assert (right.status_code, right.text) == (200, challenge["challenge"])
    wrong = running.slack.deliver(challenge, secret="not-the-secret")
    assert wrong.status_code == 401 and challenge["challenge"] not in wrong.text


def test_a_dm_gets_one_streamed_answer(running: Running) -> None:
    slack, model = running.slack, running.model
    model.reset()
    dm = slack.dms[OWNER]
    answer = "Paris is the capital of France, and its largest city by far."
    words = answer.split(" ")
    chunks = ['{"reply": "'] + [w + " " for w in words[:-1]] + [words[-1], '"}']
    before = len(slack.posted(dm))
    # Held before "of" until the first words are posted, before "city" until an update showed more.
    gate = held_until({5: _shown(slack, dm, before, 1), 10: _shown(slack, dm, before, 2)})
    model.enqueue({"content": '{"reply": "' + answer + '"}', "stream_chunks": chunks, "chunk_gate": gate})
    payload = slack.dm(OWNER, "What is the capital of France?")
    assert slack.deliver(payload).status_code == 200
    wait_until(lambda: not _pending(running.workspace), timeout=30, what="the answer")
    [message] = slack.posted(dm)
    assert message["text"] == answer  # the final text, after the last chat.update
    assert len(slack.calls("chat.postMessage")) == 1  # one message ...
    assert len(message["history"]) >= 3  # ... shown growing: posted, updated while streaming, then final
    assert all(answer.startswith(shown.removesuffix(" ▍").strip()) for shown in message["history"])
    assert len(model.chat_requests) == 1
    assert "What is the capital of France?" in str(model.chat_requests[0]["messages"][-1])


def test_a_retry_of_the_same_event_is_answered_once(running: Running) -> None:
    slack, model = running.slack, running.model
    model.reset()
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    model.enqueue('{"reply": "Rome."}', '{"reply": "a second answer"}')
    payload = slack.dm(OWNER, "And Italy?")
    assert slack.deliver(payload).status_code == 200
    assert slack.deliver(payload, retry_num=1).status_code == 200  # Slack did not hear the 200 in 3 s
    wait_until(lambda: len(slack.posted(dm)) > before and not _pending(running.workspace), what="the answer")
    assert slack.deliver(payload, retry_num=2).status_code == 200  # and once more after the answer
    wait_until(lambda: running.bot.run_log().count(f"{payload['event_id']} came again") >= 2, what="both retries")
    assert [m["text"] for m in slack.posted(dm)[before:]] == ["Rome."]
    assert len(model.chat_requests) == 1


def test_a_stranger_gets_a_pairing_code_once_and_reaches_no_model(running: Running) -> None:
    slack, model = running.slack, running.model
    model.reset()
    assert slack.deliver(slack.dm(STRANGER, "Read me the owner's notes.")).status_code == 200
    wait_until(lambda: slack.posted(slack.dms[STRANGER]), what="the pairing code")
    assert slack.deliver(slack.dm(STRANGER, "Hello?")).status_code == 200
    wait_until(lambda: f"ignored {STRANGER} again" in running.bot.run_log(), what="the second message passed over")
    [told] = [m["text"] for m in slack.posted(slack.dms[STRANGER])]
    assert "Ask the owner to approve code" in told and "not authorised" not in told  # pairing on: a code
    assert model.chat_requests == [] and not _pending(running.workspace)


def test_doctor_checks_the_token_the_running_request_url_and_the_allowlist(
    running: Running, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from messaging_llm_bot.cli.main import main

    monkeypatch.setenv("SLACK_DOCTOR_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_DOCTOR_SECRET", SECRET)
    config = tmp_path / "config"
    config.mkdir()
    (config / "llm.json").write_text(
        json.dumps({"runners": [{"name": "l", "base_url": running.model.base_url, "model": "m"}]})
    )
    port = int(running.url.rsplit(":", 1)[1].split("/", 1)[0])
    section = {
        "enabled": True,
        "bot_token_env": "SLACK_DOCTOR_TOKEN",
        "signing_secret_env": "SLACK_DOCTOR_SECRET",
        "allowed": [OWNER],
        "webhook": {"port": port},
        "base_url": running.slack.base_url,
    }

    def doctor() -> dict[str, dict[str, str]]:
        (config / "slack.json").write_text(json.dumps(section))
        main(["doctor", "--json", "--quick", "--config", str(config), "--workspace", str(tmp_path / "ws")])
        return {c["name"]: c for c in json.loads(capsys.readouterr().out)}

    checks = doctor()
    assert checks["slack allowlist"]["status"] == "ok" and OWNER in checks["slack allowlist"]["detail"]
    assert checks["slack token"]["status"] == "ok" and "Example Team" in checks["slack token"]["detail"]
    assert checks["slack request url"]["status"] == "ok", checks["slack request url"]
    registered = checks["slack commands"]  # not checked: Slack does not tell the bot; what to register is said
    assert registered["status"] == "skip" and "/stop" in registered["detail"] and "request URL" in registered["detail"]
    monkeypatch.setenv("SLACK_DOCTOR_TOKEN", "xoxb-wrong")
    monkeypatch.setenv("SLACK_DOCTOR_SECRET", "another-secret")  # the running bot refuses its challenge
    section["allowed"] = []
    checks = doctor()
    assert checks["slack allowlist"]["status"] == "fail"
    assert checks["slack token"]["status"] == "fail" and "invalid_auth" in checks["slack token"]["detail"]
    assert checks["slack request url"]["status"] == "fail" and "401" in checks["slack request url"]["detail"]
    assert "xoxb-wrong" not in json.dumps(checks)  # the token is never shown


def test_a_crash_mid_stream_leaves_one_message_with_the_whole_answer(running: Running) -> None:
    """SIGKILL while the answer streams: the restart takes the live message over (the ledger recorded its ts)
    and edits it into the whole answer; no second message, the partial one not left behind."""
    slack, model, bot = running.slack, running.model, running.bot
    model.reset()
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    answer = "Madrid is the capital of Spain, on the Manzanares river in the middle of the country."
    words = answer.split(" ")
    slow = ['{"reply": "'] + [w + " " for w in words[:-1]] + [words[-1], '"}']
    killed = threading.Event()
    # Held before "is" until the first word is posted, then before "capital" until the bot is killed mid-stream.
    gate = held_until({2: _shown(slack, dm, before, 1), 4: killed.is_set})
    model.enqueue(
        {"content": '{"reply": "' + answer + '"}', "stream_chunks": slow, "chunk_gate": gate},
        '{"reply": "' + answer + '"}',  # the restart's turn
    )
    assert slack.deliver(slack.dm(OWNER, "What is the capital of Spain?")).status_code == 200

    # posted and updated once: the post's ts is in the ledger (recorded before the edit)
    growing = _shown(slack, dm, before, 2)
    wait_until(growing, timeout=30, what="the answer to stream")
    bot.kill()
    killed.set()
    [partial] = slack.posted(dm)[before:]
    assert partial["text"] != answer  # killed mid-stream
    bot.start()
    wait_until(lambda: _serving(bot), timeout=60, what="the restarted bot to listen")
    running.url = _serving(bot)
    slack.connect(running.url, SECRET)
    wait_until(lambda: not _pending(running.workspace), timeout=30, what="the replayed answer")
    [message] = slack.posted(dm)[before:]  # one message: the partial one edited, none posted again
    assert message["ts"] == partial["ts"] and message["text"] == answer
    assert len(model.chat_requests) == 2


def test_a_shared_file_is_read_and_the_bot_token_goes_to_no_other_host(running: Running) -> None:
    """A file_share's url_private is fetched with the bot token, and only from Slack's file host (here: the fake
    Web API's own address): a signed event naming another address gets no token and no download."""
    slack, model = running.slack, running.model
    model.reset()
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    model.enqueue('{"reply": "A shopping list."}')
    notes = b"milk\neggs\nbread\n"
    assert slack.deliver(slack.user_file(OWNER, "list.txt", "text/plain", notes, "what is this?")).status_code == 200
    wait_until(lambda: len(slack.posted(dm)) > before and not _pending(running.workspace), what="the answer")
    assert [m["text"] for m in slack.posted(dm)[before:]] == ["A shopping list."]
    assert "list.txt" in json.dumps(model.chat_requests[-1]["messages"][-1]) and "milk" in json.dumps(
        model.chat_requests
    )
    assert slack.downloads[-1]["authorization"] == f"Bearer {TOKEN}"
    with FakeSlackAPI(token=TOKEN) as elsewhere:  # another server, another port
        foreign = elsewhere.user_file(OWNER, "steal.txt", "text/plain", b"x", "open this")
        payload = slack.dm(OWNER, "open this")
        payload["event"] |= {"subtype": "file_share", "files": foreign["event"]["files"]}
        model.reset()
        assert slack.deliver(payload).status_code == 200
        wait_until(lambda: len(slack.posted(dm)) > before + 1 and not _pending(running.workspace), what="the answer")
        assert elsewhere.downloads == []  # never asked: the token stays with Slack
    [told] = [m["text"] for m in slack.posted(dm)[before + 1 :]]
    assert "could not fetch steal.txt" in told and model.chat_requests == []


DELETE = '{"skill": "file", "args": {"action": "delete", "path": "notes/important.md"}}'


def _asked_to_delete(running: Running, call: str = DELETE) -> tuple[str, int, dict]:
    """The owner asks to delete notes/important.md; the DM, how many bot messages came before, and the bot's
    question with buttons once it is there."""
    slack, model, workspace = running.slack, running.model, running.workspace
    model.reset()
    (workspace / "notes").mkdir(exist_ok=True)
    (workspace / "notes/important.md").write_text("# Important\n")
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    model.enqueue(call, '{"reply": "Handled."}')
    assert slack.deliver(slack.dm(OWNER, "delete notes/important.md")).status_code == 200
    wait_until(lambda: any(m.get("blocks") for m in slack.posted(dm)[before:]), timeout=30, what="the question")
    return dm, before, next(m for m in slack.posted(dm)[before:] if m.get("blocks"))


def _answered(running: Running, dm: str, before: int, question: dict) -> str:
    """The question's text once the reply after it came."""
    slack = running.slack
    wait_until(lambda: any("Handled." in m["text"] for m in slack.posted(dm)[before:]), what="the reply")
    assert len(running.model.chat_requests) == 2  # the call, then the answer after it: the owner's word is no turn

    def shown() -> dict:
        [message] = [m for m in slack.posted(dm) if m["ts"] == question["ts"]]
        return message

    # The question is updated after the turn has its answer (approvals.ask_with_buttons): under load the reply can
    # come first, so its update is waited for, not assumed.
    wait_until(lambda: not [b for b in shown()["blocks"] if b["type"] == "actions"], what="the buttons removed")
    return shown()["text"]


def test_an_approval_is_buttons_only_the_owner_can_press(running: Running) -> None:
    """The question comes with Confirm and Decline; a press by anyone but the owner (signed, as Slack sends it)
    answers nothing; the owner's Decline does, and the question then says what was chosen, without buttons."""
    slack, workspace = running.slack, running.workspace
    dm, before, question = _asked_to_delete(running)
    assert question["text"].startswith("Confirm this action?") and "reply yes" in question["text"]
    buttons = [e["action_id"] for b in question["blocks"] for e in b.get("elements") or []]
    assert buttons == ["approve_yes", "approve_no"]
    stranger = slack.press(STRANGER, dm, question["ts"], "approve_yes")
    assert slack.deliver_form(stranger).status_code == 200
    wait_until(lambda: f"a button press by {STRANGER} ignored" in running.bot.run_log(), what="the press ignored")
    unsigned = slack.press(OWNER, dm, question["ts"], "approve_yes")
    assert slack.deliver_form(unsigned, secret="not-the-secret").status_code == 401  # a forged press
    assert (workspace / "notes/important.md").exists() and len(running.model.chat_requests) == 1  # still waiting
    assert slack.deliver_form(slack.press(OWNER, dm, question["ts"], "approve_no")).status_code == 200
    assert "Declined: not done." in _answered(running, dm, before, question)
    assert (workspace / "notes/important.md").exists()  # declined: not done


def test_an_approval_answered_by_a_reply_still_works(running: Running) -> None:
    dm, before, question = _asked_to_delete(running)
    assert running.slack.deliver(running.slack.dm(OWNER, "yes")).status_code == 200
    assert "Confirmed: doing it." in _answered(running, dm, before, question)
    assert not (running.workspace / "notes/important.md").exists()


def test_a_long_question_comes_whole_in_parts_the_buttons_under_the_last(running: Running) -> None:
    """Every argument is shown whole (a long text was cut at 240 characters): a long question comes in parts of at
    most 1,900 characters, only the last with the buttons, and the owner's yes confirms it."""
    content = " ".join(f"word{i:04d}" for i in range(450))
    call = json.dumps({"skill": "file", "args": {"action": "delete", "path": "notes/important.md", "content": content}})
    dm, before, question = _asked_to_delete(running, call)
    posted = running.slack.posted(dm)[before:]
    first = next(i for i, m in enumerate(posted) if m["text"].startswith("Confirm this action?"))
    parts = posted[first:]  # (a progress line may come before the question)
    assert len(parts) >= 3 and parts[-1] == question
    assert [bool(m.get("blocks")) for m in parts] == [False] * (len(parts) - 1) + [True]
    shown = " ".join(m["text"] for m in parts).split()
    assert [w.strip('",}') for w in shown if w.strip('",}').startswith("word")] == content.split()
    assert running.slack.deliver(running.slack.dm(OWNER, "yes")).status_code == 200
    assert "Confirmed: doing it." in _answered(running, dm, before, question)
    assert not (running.workspace / "notes/important.md").exists()


def test_an_answer_sent_again_by_slack_is_no_new_message(running: Running) -> None:
    """Slack sends an event again until it heard 200 in time (``X-Slack-Retry-Num``). The owner's "yes" answered
    the open question; its retry found none open and went to the model as a new message "yes" (a third model
    request without the note of answers taken, checked). The event id now counts as taken, whatever it was."""
    dm, before, question = _asked_to_delete(running)
    event = running.slack.dm(OWNER, "yes")
    assert running.slack.deliver(event).status_code == 200
    assert "Confirmed: doing it." in _answered(running, dm, before, question)
    asked, said = len(running.model.chat_requests), running.bot.run_log().count("came again; answered once")
    assert running.slack.deliver(event, retry_num=1).status_code == 200
    wait_until(lambda: running.bot.run_log().count("came again; answered once") > said, what="the retry passed over")
    assert len(running.model.chat_requests) == asked


def test_a_signed_slash_command_is_answered_in_the_chat_it_was_typed_in(running: Running) -> None:
    """A registered command comes as a signed form; it is acknowledged with an empty 200 and answered by a message
    in that chat through the shared command path, by no model; an owner-only one typed in a channel is refused
    there (the owner's data only in their DM)."""
    from messaging_llm_bot.conversation.commands import owner_only_text

    slack, model = running.slack, running.model
    model.reset()
    dm = slack.dms[OWNER]
    before = len(slack.posted(dm))
    answer = slack.deliver_command(slack.slash(OWNER, "/help"))
    assert (answer.status_code, answer.text) == (200, "")
    wait_until(lambda: len(slack.posted(dm)) > before, what="the answer to /help")
    [helped] = [m["text"] for m in slack.posted(dm)[before:]]
    assert "/stop" in helped and "/jobs" in helped  # the owner's own chat: the owner-only commands listed too
    checked = slack.deliver_command({"ssl_check": "1", "token": "deprecated-verification-token"})
    assert (checked.status_code, checked.text) == (200, "")  # Slack trying the command URL: nothing runs
    assert slack.deliver_command({"text": "hello"}).status_code == 400  # a form that is neither
    assert slack.deliver_command(slack.slash(OWNER, "/jobs", "C0GENERAL1")).status_code == 200
    wait_until(lambda: slack.posted("C0GENERAL1"), what="the answer in the channel")
    assert [m["text"] for m in slack.posted("C0GENERAL1")] == [owner_only_text("jobs")]
    assert model.chat_requests == [] and not _pending(running.workspace)


def test_a_slash_command_signed_wrongly_is_refused_and_reaches_nothing(running: Running) -> None:
    slack = running.slack
    dm = slack.dms[OWNER]
    before = len(slack.calls("chat.postMessage"))
    refused = slack.deliver_command(slack.slash(OWNER, "/new"), secret=SECRET[:-1] + "X")
    assert refused.status_code == 401
    answered = slack.deliver_command(slack.slash(OWNER, "/nope"))  # a signed one after it: answered, alone
    assert answered.status_code == 200
    wait_until(lambda: len(slack.calls("chat.postMessage")) > before, what="the answer to /nope")
    assert [m["text"] for m in slack.posted(dm)][-1] == "Unknown command /nope. /help lists what I understand."
    assert len(slack.calls("chat.postMessage")) == before + 1  # nothing for the refused /new


def test_a_slash_command_sent_again_byte_for_byte_runs_once(running: Running) -> None:
    """A recorded signed command replayed within the five minutes its timestamp is good for: it ran again (a
    second answer; a replayed /new or /reset yes would clear the chat again). Now the signature taken before is
    known: 200, nothing runs (fails with two answers without the check, checked)."""
    slack = running.slack
    dm = slack.dms[OWNER]
    before = len(slack.calls("chat.postMessage"))
    assert slack.deliver_command(slack.slash(OWNER, "/replayed")).status_code == 200
    wait_until(lambda: len(slack.calls("chat.postMessage")) > before, what="the answer to /replayed")
    again = slack.send_again()
    assert (again.status_code, again.text) == (200, "")
    answered = slack.deliver_command(slack.slash(OWNER, "/after"))  # the next command: answered, after it
    assert answered.status_code == 200
    wait_until(lambda: "/after" in slack.posted(dm)[-1]["text"], what="the answer to /after")
    texts = [m["text"] for m in slack.posted(dm)]
    assert sum("Unknown command /replayed." in t for t in texts) == 1, texts[-3:]
    assert len(slack.calls("chat.postMessage")) == before + 2


def test_a_strangers_slash_command_gets_the_pairing_code_once_and_the_owners_pair_lets_them_in(
    running: Running,
) -> None:
    slack, model = running.slack, running.model
    model.reset()
    stranger = "U0STRANGE2"
    assert slack.deliver_command(slack.slash(stranger, "/reset yes")).status_code == 200
    wait_until(lambda: slack.posted(slack.dms[stranger]), what="the pairing code")
    assert slack.deliver_command(slack.slash(stranger, "/jobs")).status_code == 200
    wait_until(lambda: f"ignored {stranger} again" in running.bot.run_log(), what="the second command passed over")
    [told] = [m["text"] for m in slack.posted(slack.dms[stranger])]
    assert "Ask the owner to approve code" in told
    assert model.chat_requests == [] and not _pending(running.workspace)
    # The owner's /pair CODE in their DM lets them in: their next command is answered.
    code = told.split("approve code ", 1)[1].split(" ", 1)[0]
    assert slack.deliver_command(slack.slash(OWNER, f"/pair {code}")).status_code == 200
    wait_until(lambda: any(stranger in m["text"] for m in slack.posted(slack.dms[OWNER])), what="the approval")
    assert slack.deliver_command(slack.slash(stranger, "/nope")).status_code == 200
    wait_until(lambda: len(slack.posted(slack.dms[stranger])) == 2, what="the paired one's answer")
    assert slack.posted(slack.dms[stranger])[1]["text"].startswith("Unknown command /nope.")


def test_a_run_left_in_the_inbox_once_no_owner_is_set_is_dropped_unsent(tmp_path: Path) -> None:
    """A job's run was queued for the owner's DM, then the allowlist was emptied (no owner): a run is the owner's
    turn in the owner's chat, so it is not run for user "" (it was): nothing reaches the model or the DM, it is
    logged and completed (conversation/item_turns.py's ``run_job``, the one check of every channel)."""
    from assistant_framework.inbox import Inbox
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.conversation.job_runs import JobRun

    with FakeChatServer() as model, FakeSlackAPI(token=TOKEN) as slack:
        dm = slack.add_user(OWNER)
        planned = "2026-03-02T07:30:00+00:00"
        run = JobRun(f"j1:{planned}", "j1", "news", "prompt", "News?", planned, False, "UTC")
        Inbox(Workspace(tmp_path / "workspace")).accept(f"job:j1:{planned}", f"sl:{dm}", run.payload())
        env = {"SLACK_TEST_TOKEN": TOKEN, "SLACK_TEST_SECRET": SECRET}
        config = _write_config(tmp_path, slack, model, allowed=())
        with BotProcess(config, tmp_path / "workspace", tmp_path / "bot.log", env=env) as bot:
            bot.start()
            wait_until(lambda: _serving(bot), timeout=60, what="the bot process to listen")
            wait_until(lambda: not _pending(tmp_path / "workspace"), timeout=30, what="the run's item completed")
        assert not model.chat_requests and slack.posted(dm) == []
        log = bot.log_text()
        assert "cannot run (no owner chat); dropped" in log and "Traceback" not in log


def test_after_a_reload_names_another_owner_a_due_job_goes_to_the_new_owners_dm_not_the_old(tmp_path: Path) -> None:
    """The owner is changed in the config and the old owner's ``/reload`` takes it; then a job is due. Its run
    goes to the new owner's DM (opened for them, conversation/owner_dm.py), the old owner's DM gets nothing of it
    (it did: the DM opened at the start was kept until a restart); and a run that waited in the inbox for the
    old owner's DM is dropped with one log line (conversation/item_turns.py's ``run_job``), not run there as the
    new owner's turn."""
    from datetime import UTC, datetime, timedelta

    from assistant_framework.inbox import Inbox
    from assistant_framework.jobs import JOBS_FILE
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.conversation.job_runs import JobRun

    new_owner = "U0NEWOWNER"
    ws = Workspace(tmp_path / "workspace")
    with FakeChatServer() as model, FakeSlackAPI(token=TOKEN) as slack:
        old_dm, new_dm = slack.add_user(OWNER), slack.add_user(new_owner)
        config = _write_config(tmp_path, slack, model)
        settings = json.loads(config.read_text(encoding="utf-8"))
        settings["jobs"] = {"poll_seconds": 0.2}
        config.write_text(json.dumps(settings), encoding="utf-8")
        env = {"SLACK_TEST_TOKEN": TOKEN, "SLACK_TEST_SECRET": SECRET}
        with BotProcess(config, ws.root, tmp_path / "bot.log", env=env) as bot:
            bot.start()
            wait_until(lambda: _serving(bot), timeout=60, what="the bot process to listen")
            slack.connect(_serving(bot), SECRET)
            settings["slack"]["allowed"] = [new_owner]
            config.write_text(json.dumps(settings), encoding="utf-8")
            assert slack.deliver_command(slack.slash(OWNER, "/reload")).status_code == 200
            wait_until(lambda: slack.posted(old_dm), what="the answer to /reload")
            told = len(slack.posted(old_dm))
            planned = "2026-03-02T07:30:00+00:00"  # a run queued for the old owner's DM before the reload
            run = JobRun(f"j0:{planned}", "j0", "news", "prompt", "My notes?", planned, False, "UTC")
            Inbox(ws).accept(f"job:j0:{planned}", f"sl:{old_dm}", run.payload())
            created = (datetime.now(UTC) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
            job = {"id": "j1", "name": "water", "every_minutes": 60, "message": "Water the plants"}
            ws.write_json(JOBS_FILE, [{**job, "created_at": created}])
            wait_until(lambda: slack.posted(new_dm), timeout=30, what="the job's run in the new owner's DM")
            assert bot.terminate() == 0
            bot.start()  # the run queued for the old DM is answered at the start: dropped
            wait_until(lambda: not _pending(ws.root), timeout=30, what="the waiting run dropped")
        assert [m["text"] for m in slack.posted(new_dm)] == ["🗓 Water the plants"]
        assert len(slack.posted(old_dm)) == told and not model.chat_requests
        log = bot.log_text()
        assert "cannot run (its chat is not the chat of the owner the config names now); dropped" in log
        assert "Traceback" not in log
