"""Actions out of the machine done once when the replayed turn is worded differently (docs/actions.md, "Once per
message, whatever the wording").

The real bot process is killed (SIGKILL) as soon as the outside server has the mail, the event or the file;
after the restart the turn is asked again (docs/reliability.md) and the fake model, sampling as a real one does,
writes the same mail with another subject and body, the same event with another title, the same file with
another caption. The SMTP server (aiosmtpd), the CalDAV server (Radicale) and the chat still have one. With
``send`` asking (the default), the owner who confirmed before the kill is not asked again for a mail that will
not go out.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import icalendar
import pytest

from assistant_framework.workspace import Workspace
from tests.console_harness import Terminal, write_config
from tests.crash_bot import BotProcess, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.caldav_server import CalDAVServer
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.smtp_server import FakeSMTPServer
from tests.telegram_harness import OWNER, approval_question
from tests.waiting import wait_until

QUESTION = "Confirm this action?"


@pytest.fixture
def smtp():
    with FakeSMTPServer() as server:
        yield server


def mail_config(smtp: FakeSMTPServer) -> dict:
    return {"from": "Owner <owner@example.org>", "smtp": {"host": "127.0.0.1", "port": smtp.port, "security": "none"}}


class ReplayingModel:
    """The model of a turn that makes its calls one after the other, then answers ``reply``: the nth run of the
    turn (the first, the replay after the kill) writes ``calls[n]`` (a call, or a list of calls). The first
    run's answer after its first call waits for ``release``, so the bot is killed with the action done and the
    turn not finished."""

    def __init__(self, skill: str, calls: list, reply: str) -> None:
        self.skill, self.reply = skill, reply
        self.calls = [one if isinstance(one, list) else [one] for one in calls]
        self.runs = self.step = 0
        self.results: list[str] = []
        self.release = threading.Event()

    def __call__(self, request: dict) -> str:
        last = str(request["messages"][-1]["content"])
        run = self.calls[min(self.runs, len(self.calls)) - 1] if self.runs else []
        if f"Result of skill '{self.skill}'" not in last:
            self.runs, self.step = self.runs + 1, 0
            run = self.calls[min(self.runs, len(self.calls)) - 1]
            return json.dumps({"skill": self.skill, "args": run[0]})
        self.results.append(last)
        if len(self.results) == 1:
            self.release.wait(30)  # the first run is killed while it waits here
        self.step += 1
        if self.step < len(run):
            return json.dumps({"skill": self.skill, "args": run[self.step]})
        return json.dumps({"reply": self.reply})


def run_killed_turn(
    tmp_path: Path,
    bot_config: dict,
    model: ReplayingModel,
    extra: dict,
    text: str,
    done: Callable[[FakeBotAPI], object],
    *,
    confirm: bool = False,
    decline_later: bool = False,
) -> list[str]:
    """The owner's ``text`` answered by the real bot: killed once ``done(fake)`` (the outside server has it), started
    again, the turn replayed to its end. ``confirm``: the owner confirms the first run's question;
    ``decline_later``: declines a question of the replay (else the replay stops there). The owner's chat as sent,
    in order."""
    with FakeBotAPI() as fake, FakeChatServer() as server:
        server.set_handler(model)
        runner = {"name": "fake", "base_url": server.base_url, "model": "fake-model", "timeout_seconds": 60}
        base = dict(bot_config, llm={**bot_config["llm"], "runners": [runner]})
        config = write_bot_config(tmp_path / "config.json", base, fake, extra=extra)
        with BotProcess(config, tmp_path / "workspace", tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            fake.send_message(text, user_id=OWNER)
            if confirm:
                question, buttons = approval_question(fake)
                fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes")), question["message_id"])
            wait_until(lambda: done(fake), timeout=30)
            bot.kill()
            model.release.set()
            bot.start().wait_ready()
            asked = len(_questions(fake))

            def replied() -> bool:
                return any(model.reply in t for t in sent_texts(fake, OWNER))

            # The replay ends with the model's reply, or stops at a question no one here answers.
            fake.wait_for(lambda: replied() or len(_questions(fake)) > asked, timeout=30)
            if decline_later and not replied():
                _press(fake, ":no")
                fake.wait_for(replied, timeout=30)
            chat = sent_texts(fake, OWNER)
            assert bot.terminate() == 0
        return chat


def _questions(fake: FakeBotAPI) -> list[dict]:
    return [c for c in fake.calls("sendMessage") if str(c["params"].get("text", "")).startswith(QUESTION)]


def _press(fake: FakeBotAPI, ending: str) -> None:
    """The owner presses the button ending in ``ending`` under the newest question."""
    markup = _questions(fake)[-1]["params"]["reply_markup"]
    markup = json.loads(markup) if isinstance(markup, str) else markup
    data = next(
        b["callback_data"] for row in markup["inline_keyboard"] for b in row if b["callback_data"].endswith(ending)
    )
    message = [m for m in fake.messages(OWNER) if m.get("text", "").startswith(QUESTION)][-1]
    fake.callback_query(OWNER, data, message["message_id"])


@pytest.mark.timeout(120)
def test_a_replayed_mail_with_another_subject_and_body_is_not_sent_again(tmp_path, bot_config, smtp):
    """Killed as soon as the SMTP server has the mail; the replay writes it in other words: still one mail, and
    the model is told when it was sent and that it went as first written."""
    model = ReplayingModel(
        "mail",
        [
            {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "Yes, I'll come!"},
            {"action": "send", "to": "Anna <anna@example.org>", "subject": "Re: Saturday", "body": "I'll be there."},
        ],
        "Mailed Anna.",
    )
    # A trusted turn and policy.skills.mail "allow": it sends unasked (the question: the test below).
    extra = {"mail": mail_config(smtp), "policy": {"skills": {"mail": "allow"}}}
    chat = run_killed_turn(tmp_path, bot_config, model, extra, "mail Anna that I'll come", lambda fake: smtp.messages)
    assert any("Mailed Anna." in t for t in chat)
    assert len(smtp.messages) == 1 and smtp.messages[0]["Subject"] == "Saturday"
    assert model.runs == 2 and "not sent again" in model.results[-1] and "'Saturday'" in model.results[-1]


@pytest.mark.timeout(120)
def test_the_owner_who_confirmed_before_the_kill_is_not_asked_again(tmp_path, bot_config, smtp):
    """``send`` asks (the default): the owner confirms, the mail goes, the bot is killed. The replay's send,
    in other words, goes nowhere, so nobody is asked about it: no second question, one mail."""
    model = ReplayingModel(
        "mail",
        [
            {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "Yes, I'll come!"},
            {"action": "send", "to": "anna@example.org", "subject": "Saturday!", "body": "Count me in."},
        ],
        "Mailed Anna.",
    )
    extra = {"mail": mail_config(smtp)}
    chat = run_killed_turn(
        tmp_path, bot_config, model, extra, "mail Anna that I'll come", lambda fake: smtp.messages, confirm=True
    )
    assert [t for t in chat if t.startswith(QUESTION)] == [chat[0]]  # the first run's question only
    assert any("Mailed Anna." in t for t in chat)
    assert len(smtp.messages) == 1 and "not sent again" in model.results[-1]


@pytest.mark.timeout(120)
def test_a_replayed_call_beyond_what_the_first_run_did_still_asks(tmp_path, bot_config, smtp):
    """The replay mails Anna in other words (answered from the record, nobody asked), then Bob, a mail the first
    run never sent: that one asks the owner, who declines, and Bob gets nothing. Only a call that does nothing
    goes unasked."""
    model = ReplayingModel(
        "mail",
        [
            {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "Yes, I'll come!"},
            [
                {"action": "send", "to": "anna@example.org", "subject": "Sat", "body": "Count me in."},
                {"action": "send", "to": "bob@example.org", "subject": "Sat", "body": "I'll be at the party."},
            ],
        ],
        "Done.",
    )
    extra = {"mail": mail_config(smtp)}
    chat = run_killed_turn(
        tmp_path,
        bot_config,
        model,
        extra,
        "mail Anna that I'll come",
        lambda fake: smtp.messages,
        confirm=True,
        decline_later=True,
    )
    questions = [t for t in chat if t.startswith(QUESTION)]
    assert len(questions) == 2 and "bob@example.org" in questions[1] and "anna@" not in questions[1]
    assert smtp.recipients == [["anna@example.org"]]
    assert any("Done." in t for t in chat)


@pytest.mark.timeout(120)
def test_the_owner_who_declined_before_the_kill_is_not_asked_again_and_nothing_goes(tmp_path, bot_config, smtp):
    """The owner presses No, the bot is killed before the turn ends. The replay's send, in other words, is
    refused unasked (a no is an answer): no second question, no mail, and the model is told when they declined."""
    model = ReplayingModel(
        "mail",
        [
            {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "Yes, I'll come!"},
            {"action": "send", "to": "Anna <anna@example.org>", "subject": "Sat", "body": "Count me in."},
        ],
        "Not mailed.",
    )
    ledger = tmp_path / "workspace" / "mail" / "sent.jsonl"
    pressed: list[bool] = []

    def declined(fake: FakeBotAPI) -> bool:
        if not pressed and _questions(fake):
            _press(fake, ":no")
            pressed.append(True)
        return ledger.exists() and '"declined"' in ledger.read_text() and len(model.results) == 1

    extra = {"mail": mail_config(smtp)}
    chat = run_killed_turn(tmp_path, bot_config, model, extra, "mail Anna that I'll come", declined)
    assert [t for t in chat if t.startswith(QUESTION)] == [chat[0]]  # the first run's question only
    assert any("Not mailed." in t for t in chat) and smtp.messages == []
    assert model.runs == 2 and "The owner declined this at" in model.results[-1]


# -- the calendar: Radicale ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def radicale(tmp_path_factory):
    with CalDAVServer(tmp_path_factory.mktemp("caldav")) as server:
        yield server


def titles(radicale: CalDAVServer, url: str) -> list[str]:
    return [
        str(event["summary"])
        for raw in radicale.events(url)
        for event in icalendar.Calendar.from_ical(raw).walk("VEVENT")
    ]


@pytest.mark.timeout(120)
def test_a_replayed_event_with_another_title_is_not_created_again(tmp_path, bot_config, radicale):
    name = f"Home {uuid.uuid4().hex[:6]}"
    url = radicale.make_calendar(name)
    model = ReplayingModel(
        "calendar",
        [
            {"action": "create", "title": "Dentist", "start": "2027-03-03 15:00", "minutes": 45},
            {"action": "create", "title": "Dentist appointment", "start": "2027-03-03 15:00", "minutes": 45},
        ],
        "Booked.",
    )
    extra = {"calendar": {"url": radicale.url, "username": radicale.user, "password": "x", "calendar": name}}
    chat = run_killed_turn(
        tmp_path, bot_config, model, extra, "put the dentist in, Wed 3 March 15:00", lambda fake: titles(radicale, url)
    )
    assert any("Booked." in t for t in chat)
    assert titles(radicale, url) == ["Dentist"]
    assert model.runs == 2 and "not done again" in model.results[-1]


# -- a file to the chat: the fake Bot API ----------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_replayed_file_with_another_caption_is_not_sent_again(tmp_path, bot_config):
    model = ReplayingModel(
        "send_file",
        [{"path": "exports/expenses.csv", "caption": "November"}, {"path": "exports/expenses.csv", "caption": "Nov."}],
        "Here it is.",
    )
    (tmp_path / "workspace" / "exports").mkdir(parents=True)
    (tmp_path / "workspace" / "exports" / "expenses.csv").write_bytes(b"date,amount\n2026-11-02,12.50\n")

    def documents(fake: FakeBotAPI) -> list[dict]:
        return [c["params"] for c in fake.calls("sendDocument") if c["status"] == 200]

    seen: list[FakeBotAPI] = []

    def sent(fake: FakeBotAPI) -> object:
        seen[:] = [fake]
        return documents(fake)

    chat = run_killed_turn(tmp_path, bot_config, model, {}, "send me November's expenses", sent)
    assert any("Here it is." in t for t in chat)
    assert [d["caption"] for d in documents(seen[0])] == ["November"]
    assert model.runs == 2 and "not sent again" in model.results[-1]


@pytest.mark.timeout(120)
def test_a_file_the_owner_declined_before_the_kill_is_not_asked_again_and_not_sent(tmp_path, bot_config):
    """As the mail above, for send_file under a policy that asks for it: one question, no document."""
    model = ReplayingModel(
        "send_file",
        [{"path": "exports/expenses.csv", "caption": "November"}, {"path": "exports/expenses.csv", "caption": "Nov."}],
        "Not sent.",
    )
    (tmp_path / "workspace" / "exports").mkdir(parents=True)
    (tmp_path / "workspace" / "exports" / "expenses.csv").write_bytes(b"date,amount\n2026-11-02,12.50\n")
    ledger = tmp_path / "workspace" / "state" / "files_out.jsonl"
    seen: list[FakeBotAPI] = []

    def declined(fake: FakeBotAPI) -> bool:
        if not seen and _questions(fake):
            _press(fake, ":no")
            seen.append(fake)
        return ledger.exists() and '"declined"' in ledger.read_text() and len(model.results) == 1

    extra = {"policy": {"skills": {"send_file": "ask"}}}
    chat = run_killed_turn(tmp_path, bot_config, model, extra, "send me November's expenses", declined)
    assert [t for t in chat if t.startswith(QUESTION)] == [chat[0]]
    assert any("Not sent." in t for t in chat) and seen[0].calls("sendDocument") == []
    assert model.runs == 2 and "The owner declined this at" in model.results[-1]


# -- the terminal chat: y/N at the prompt ----------------------------------------------------------


@pytest.mark.timeout(120)
def test_the_terminal_owner_who_typed_n_before_the_kill_is_not_asked_again(tmp_path, smtp, test_skills_dir):
    """The terminal chat on a pty: the owner types "n" at the mail's [y/N], the process is killed (SIGKILL) before
    the turn ends and started again; the message left unanswered is answered, and its send, in other words, is
    refused unasked: no second [y/N], no mail, and the model is told when they declined."""
    pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")
    model = ReplayingModel(
        "mail",
        [
            {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "Yes, I'll come!"},
            {"action": "send", "to": "Anna <anna@example.org>", "subject": "Sat", "body": "Count me in."},
        ],
        "Not mailed.",
    )
    workspace = Workspace(tmp_path / "ws").root  # an existing workspace: a new one would be asked about
    ledger = workspace / "mail" / "sent.jsonl"
    with FakeChatServer() as server:
        server.set_handler(model)
        config = write_config(tmp_path / "config", server.base_url, test_skills_dir)
        (config / "mail.json").write_text(json.dumps(mail_config(smtp)))
        argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
        argv += ["--workspace", str(workspace)]
        term = Terminal(argv)
        try:
            term.wait_for("you> ")
            term.type("mail Anna that I'll come\r")
            term.wait_for("[y/N]")
            term.type("n\r")
            wait_until(lambda: model.results, timeout=30)  # the declined call's result is with the model
            term.proc.send_signal(signal.SIGKILL)  # the turn waits for the model's answer to it
            term.proc.wait(10)
        finally:
            term.close()
        model.release.set()
        term = Terminal(argv)
        try:
            term.wait_for("left unanswered by the last run")
            shown = term.wait_for_any(("Not mailed.", "[y/N]"))
            assert shown == "Not mailed.", term.output  # not asked again
            term.wait_for("you> ", start=term.output.index("Not mailed."))
            term.type("\x04")  # Ctrl-D
            assert term.proc.wait(30) == 0
        finally:
            term.close()
    assert smtp.messages == []
    assert model.runs == 2 and "The owner declined this at" in model.results[-1]
    assert [json.loads(line)["status"] for line in ledger.read_text().splitlines()] == ["declined"]
