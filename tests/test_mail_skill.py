"""The ``mail`` skill against a real SMTP server (aiosmtpd) and the real IMAP server the mail collector
reads (pymap): Anna's mail is fetched by the mail collector, then through the real bot (fake Bot API,
fake model server) "reply to Anna's mail that I'll come" sends, after the owner approves, one mail whose
``In-Reply-To`` is Anna's ``Message-ID``; declined, nothing is sent. The same call again sends nothing
(recorded before the send); a guest never sends; recipients are bounded."""

from __future__ import annotations

import json
import threading
from email.message import EmailMessage
from pathlib import Path

import pytest

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.config.settings import Settings
from assistant_framework.skills.loader import load_skill_folder
from assistant_framework.skills.spec import SkillContext
from assistant_framework.workspace import Workspace
from tests.crash_bot import BotProcess, sent_texts, write_bot_config
from tests.fakes.bot_api import FakeBotAPI
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.imap_server import FakeIMAPServer
from tests.fakes.smtp_server import FakeSMTPServer
from tests.telegram_harness import OWNER, approval_question, texts
from tests.waiting import wait_until

SKILL = load_skill_folder(Path(__file__).resolve().parent.parent / "skills" / "mail")
PASSWORD = "s3cret-Pa55word"
ANNA_ID = "<party-2026-anna@example.org>"
FRIEND = 42


def anna_mail() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Anna Berg <anna@example.org>"
    msg["To"] = "Owner <owner@example.org>"
    msg["Subject"] = "Party on Saturday"
    msg["Date"] = "Mon, 06 Jan 2025 10:00:00 +0000"
    msg["Message-ID"] = ANNA_ID
    msg.set_content("Will you come to my party on Saturday?")
    return msg.as_bytes()


@pytest.fixture(scope="module")
def imap_server():
    with FakeIMAPServer(user="owner", password=PASSWORD) as server:
        server.append("INBOX", anna_mail())
        yield server


@pytest.fixture
def smtp():
    with FakeSMTPServer() as server:
        yield server


def fetch_mail(workspace: Workspace, imap_server) -> None:
    """The mail collector's real run: Anna's mail in collectors/mail/index.jsonl."""
    config = {
        "runtime": {"timezone": "Europe/Berlin"},
        "collectors": {
            "mail": {
                "enabled": True,
                "host": "127.0.0.1",
                "port": imap_server.port,
                "security": "plain",
                "username": "owner",
                "password": PASSWORD,
            }
        },
    }
    manager = CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), workspace)
    result = CollectorRunner(manager, workspace, timezone="Europe/Berlin").run_once("mail")
    assert result.outcome == "ok", result.error


def mail_config(smtp) -> dict:
    return {"from": "Owner <owner@example.org>", "smtp": {"host": "127.0.0.1", "port": smtp.port, "security": "none"}}


def _reply_turn(fake, start_bot, chat_server, workspace, imap_server, smtp, *, yes: bool) -> None:
    fetch_mail(workspace, imap_server)
    start_bot(config_patch=lambda c: c.update(mail=mail_config(smtp)))
    call = {"skill": "mail", "args": {"action": "reply", "reply_to": ANNA_ID, "body": "I'll come!"}}
    chat_server.enqueue(json.dumps(call), json.dumps({"reply": "Answered Anna."}))
    fake.send_message("reply to Anna's mail that I'll come")
    message, buttons = approval_question(fake)
    assert "mail" in message["text"] and "I'll come!" in message["text"]
    # A reply's arguments name a Message-ID only: the question says who it goes to, as the skill resolves it.
    assert "goes to: Anna Berg <anna@example.org>" in message["text"], message["text"]
    assert smtp.messages == []  # nothing goes out before the answer
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes" if yes else ":no")), message["message_id"])
    fake.wait_for(lambda: any("Answered Anna." in t for t in texts(fake)), timeout=30)


def test_the_owner_approves_and_one_threaded_reply_reaches_the_smtp_server(
    fake, start_bot, chat_server, workspace, imap_server, smtp
):
    _reply_turn(fake, start_bot, chat_server, workspace, imap_server, smtp, yes=True)
    [sent] = smtp.messages
    assert sent["In-Reply-To"] == ANNA_ID and sent["References"] == ANNA_ID
    assert sent["Subject"] == "Re: Party on Saturday"
    assert smtp.recipients == [["anna@example.org"]]
    assert sent.get_content().strip() == "I'll come!"
    [saved] = workspace.list("mail/sent/*.eml")
    assert ANNA_ID in workspace.read_text(saved)


def test_declined_nothing_is_sent(fake, start_bot, chat_server, workspace, imap_server, smtp):
    _reply_turn(fake, start_bot, chat_server, workspace, imap_server, smtp, yes=False)
    assert smtp.messages == []
    # The ledger keeps only the owner's no (a replay after a kill is not asked again), no send begun.
    assert [row["status"] for row in workspace.read_jsonl("mail/sent.jsonl")] == ["declined"]


def test_a_guest_never_sends(fake, start_bot, chat_server, smtp):
    def patch(config):
        config["mail"] = mail_config(smtp)
        config["policy"] = {"guest_skills": ["mail"], "skills": {"mail": "allow"}}

    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=patch)
    call = {"skill": "mail", "args": {"action": "send", "to": "x@example.org", "subject": "hi", "body": "hi"}}
    chat_server.enqueue(json.dumps(call), json.dumps({"reply": "guest answered"}))
    fake.send_message("mail x for me", user_id=FRIEND)
    fake.wait_for(lambda: any("guest answered" in t for t in texts(fake, FRIEND)), timeout=20)
    assert "only in the owner's own chat" in json.dumps(chat_server.chat_requests[-1]["messages"][-1])
    assert smtp.messages == []


@pytest.mark.timeout(90)
def test_a_sigkill_right_after_the_smtp_server_has_the_mail_sends_no_second_one(tmp_path, bot_config, smtp):
    """The bot process is killed as soon as the SMTP server has the mail (the model's answer after the send held
    back); the restart runs the turn again, the model asks for the same mail, and mail/sent.jsonl sends none."""
    release, results = threading.Event(), []
    call = {"skill": "mail", "args": {"action": "send", "to": "anna@example.org", "subject": "Sat", "body": "Yes!"}}

    def model(request: dict) -> str:
        last = str(request["messages"][-1]["content"])
        if "Result of skill 'mail'" not in last:
            return json.dumps(call)
        results.append(last)
        if len(results) == 1:
            release.wait(30)  # the first run is killed while it waits here
        return '{"reply": "Mailed Anna."}'

    with FakeBotAPI() as fake, FakeChatServer() as server:
        server.set_handler(model)
        runner = {"name": "fake", "base_url": server.base_url, "model": "fake-model", "timeout_seconds": 60}
        base = dict(bot_config, llm={**bot_config["llm"], "runners": [runner]})
        # A trusted turn and policy.skills.mail "allow": it sends unasked (the question is tested above).
        extra = {"mail": mail_config(smtp), "policy": {"skills": {"mail": "allow"}}}
        config = write_bot_config(tmp_path / "config.json", base, fake, extra=extra)
        with BotProcess(config, tmp_path / "workspace", tmp_path / "bot.log") as bot:
            bot.start().wait_ready()
            fake.send_message("mail Anna that I'll come on Saturday", user_id=OWNER)
            wait_until(lambda: smtp.messages, timeout=30)
            bot.kill()
            release.set()
            bot.start().wait_ready()
            fake.wait_for(lambda: "Mailed Anna." in sent_texts(fake, OWNER), timeout=30)
            assert bot.terminate() == 0
        assert len(smtp.messages) == 1 and smtp.recipients == [["anna@example.org"]]
        assert results[-1].count("not sent again") == 1


def test_a_draft_needs_no_question_and_sends_nothing(fake, start_bot, chat_server, workspace, smtp):
    """A draft stays in the workspace (``ACTION_CAPABILITIES``: ``write``): the default policy lets it run
    unasked, while a send or reply asks (above)."""
    start_bot(config_patch=lambda c: c.update(mail=mail_config(smtp)))
    call = {"skill": "mail", "args": {"action": "draft", "to": "anna@example.org", "subject": "Sat", "body": "Maybe"}}
    chat_server.enqueue(json.dumps(call), json.dumps({"reply": "Draft saved."}))
    fake.send_message("draft a mail to Anna")
    fake.wait_for(lambda: any("Draft saved." in t for t in texts(fake)), timeout=30)
    assert not any(t.startswith("Confirm this action?") for t in texts(fake))
    [draft] = workspace.list("mail/drafts/*.eml")
    assert "Maybe" in workspace.read_text(draft) and smtp.messages == []


# -- the skill on its own ---------------------------------------------------------------------


def owner_context(server, **mail) -> SkillContext:
    return SkillContext(conversation_id="tg:1", config={"mail": {**mail_config(server), **mail}})


def turn_run(server, message_id: int = 41, **mail) -> SkillContext:
    """One run of the turn answering the owner's message ``message_id``: a new context for each run, as the bot
    makes one (the turn run again after a restart is a new run of the same message)."""
    return SkillContext(conversation_id="tg:1", message_id=message_id, config={"mail": {**mail_config(server), **mail}})


def test_the_same_call_again_sends_nothing(tmp_path, smtp):
    """A turn run again after a crash right after the send makes the same call: one mail, not two; nor does the
    same call twice in one run."""
    workspace = Workspace(tmp_path / "ws")
    args = {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "I'll come."}
    run = turn_run(smtp)
    first = SKILL.run(workspace, dict(args), run)
    assert SKILL.run(workspace, dict(args), run).startswith("not sent again")
    again = SKILL.run(workspace, dict(args), turn_run(smtp))
    assert first.startswith("sent to anna@example.org") and again.startswith("not sent again")
    assert "not in this call's words" not in again
    assert len(smtp.messages) == 1


def test_a_replay_in_other_words_sends_nothing_and_a_later_message_sends_again(tmp_path, smtp):
    """The replay writes the mail to Anna with another subject and body: matched by the message and the
    recipient, not sent, and the model is told what went. The owner asking again in a new message sends."""
    workspace = Workspace(tmp_path / "ws")
    args = {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "I'll come."}
    SKILL.run(workspace, dict(args), turn_run(smtp))
    reworded = {"action": "send", "to": "Anna <ANNA@example.org>", "subject": "Sat!", "body": "Count me in."}
    said = SKILL.run(workspace, reworded, turn_run(smtp))
    assert said.startswith("not sent again: the mail to anna@example.org, subject 'Saturday'")
    assert "for this message" in said and "not in this call's words" in said
    assert len(smtp.messages) == 1
    assert SKILL.run(workspace, dict(args), turn_run(smtp, message_id=42)).startswith("sent to")
    assert len(smtp.messages) == 2


def test_two_mails_of_a_turn_replayed_in_the_other_order_each_go_once(tmp_path, smtp):
    """A turn mails Anna and Bob; the replay mails Bob first, in other words, then Anna, then Anna once more:
    each recipient's first mail is answered from its record, the extra one (a call the first run did not make)
    is sent."""
    workspace = Workspace(tmp_path / "ws")
    first = turn_run(smtp)
    SKILL.run(workspace, {"action": "send", "to": "anna@example.org", "subject": "Sat", "body": "Yes"}, first)
    SKILL.run(workspace, {"action": "send", "to": "bob@example.org", "subject": "Sat", "body": "Anna comes"}, first)
    replay = turn_run(smtp)
    bob = SKILL.run(workspace, {"action": "send", "to": "bob@example.org", "subject": "Hi", "body": "A."}, replay)
    anna = SKILL.run(workspace, {"action": "send", "to": "anna@example.org", "subject": "Hi", "body": "Y."}, replay)
    assert "to bob@example.org" in bob and bob.startswith("not sent again")
    assert "to anna@example.org" in anna and anna.startswith("not sent again")
    more = SKILL.run(workspace, {"action": "send", "to": "anna@example.org", "subject": "PS", "body": "Cake?"}, replay)
    assert more.startswith("sent to anna@example.org")
    assert [m["Subject"] for m in smtp.messages] == ["Sat", "Sat", "PS"]


def test_turns_without_a_message_each_send_and_a_repeat_within_one_does_not(tmp_path, smtp):
    """A served client's turn answers no message (``message_id`` None) and is never run again: its records match
    only its own calls. The same call twice in it sends once; another such turn, the same mail, sends again."""
    workspace = Workspace(tmp_path / "ws")
    args = {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "I'll come."}
    one = owner_context(smtp)
    assert SKILL.run(workspace, dict(args), one).startswith("sent to")
    assert SKILL.run(workspace, dict(args), one).startswith("not sent again")
    assert SKILL.run(workspace, dict(args), owner_context(smtp)).startswith("sent to")
    assert len(smtp.messages) == 2


def test_a_refused_send_can_be_tried_again(tmp_path, smtp):
    """Refused (nothing reached the server): recorded failed, matching nothing. The same run tries again and
    sends; the replay of that run, one call, sends nothing."""
    workspace = Workspace(tmp_path / "ws")
    args = {"action": "send", "to": "anna@example.org", "subject": "Saturday", "body": "I'll come."}
    closed = FakeSMTPServer()  # a port nobody listens on
    run = turn_run(smtp)
    refused = turn_run(smtp, smtp={"host": "127.0.0.1", "port": closed.port, "security": "none"})
    refused.actions = run.actions  # the same run of the turn, its server down at the first call
    with pytest.raises(ValueError, match="could not be sent"):
        SKILL.run(workspace, dict(args), refused)
    assert SKILL.run(workspace, {**args, "body": "I'll come!"}, run).startswith("sent to")
    assert SKILL.run(workspace, dict(args), turn_run(smtp)).startswith("not sent again")
    assert len(smtp.messages) == 1
    statuses = [row["status"] for row in workspace.read_jsonl("mail/sent.jsonl")]
    assert statuses == ["begun", "failed", "begun", "done"]


def test_recipients_are_bounded_and_checked(tmp_path, smtp):
    workspace = Workspace(tmp_path / "ws")
    many = ", ".join(f"p{i}@example.org" for i in range(4))
    with pytest.raises(ValueError, match="4 recipients: at most 3"):
        SKILL.run(
            workspace,
            {"action": "send", "to": many, "subject": "s", "body": "b"},
            owner_context(smtp, max_recipients=3),
        )
    with pytest.raises(ValueError, match="not a mail address"):
        SKILL.run(workspace, {"action": "send", "to": "anna", "subject": "s", "body": "b"}, owner_context(smtp))
    with pytest.raises(ValueError, match="no fetched mail has Message-ID"):
        SKILL.run(workspace, {"action": "reply", "reply_to": "<nope@x>", "body": "b"}, owner_context(smtp))
    assert smtp.messages == []


def test_a_draft_is_saved_and_not_sent(tmp_path, smtp):
    workspace = Workspace(tmp_path / "ws")
    said = SKILL.run(
        workspace, {"action": "draft", "to": "anna@example.org", "subject": "s", "body": "later"}, owner_context(smtp)
    )
    assert "nothing was sent" in said and smtp.messages == []
    [draft] = workspace.list("mail/drafts/*.eml")
    assert "later" in workspace.read_text(draft)


def test_a_long_mail_is_shown_whole_over_several_messages_before_the_owner_confirms(
    fake, start_bot, chat_server, workspace, smtp
):
    """Before: a mail's body was cut at 240 characters in the question, so the owner confirmed a mail they saw
    only the start of (what its end said, or whom it named, unseen). Now the question shows every argument whole:
    a body too long for one Telegram message comes over several, the buttons under the last, and the mail that
    goes out is the one shown."""
    body = " ".join(f"Line {i:03d} of the letter." for i in range(220)) + " P.S. Bring the spare key to Bob."
    assert 4096 < len(body) < 6000
    start_bot(config_patch=lambda c: c.update(mail=mail_config(smtp)), progress=False)
    send = {"action": "send", "to": "anna@example.org", "subject": "The letter", "body": body}
    chat_server.enqueue(json.dumps({"skill": "mail", "args": send}), json.dumps({"reply": "Sent."}))
    fake.send_message("send Anna the letter")
    message, buttons = approval_question(fake)
    asked = texts(fake)  # the question's parts, in order, the last with the buttons
    assert len(asked) >= 3 and asked[0].startswith("Confirm this action?") and asked[-1] == message["text"], asked
    assert all(len(part) <= 1900 for part in asked)
    # Split between words: every word of the body is there, in order ("P.S. Bring the spare key to Bob." too).
    assert "".join(json.dumps(body).split()) in "".join("".join(asked).split())
    assert smtp.messages == []
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes")), message["message_id"])
    fake.wait_for(lambda: any("Sent." in t for t in texts(fake)), timeout=30)
    [sent] = smtp.messages
    assert sent.get_content().strip() == body


def test_the_question_shows_every_recipient_and_a_call_too_long_to_show_whole_is_not_asked(
    fake, start_bot, chat_server, workspace, smtp
):
    """Before: each argument was cut at 240 characters, so a `to` padded with a long display name showed the owner
    "Anna ... [... 40 more characters]" and a Confirm sent the mail to the address hidden in the cut too. Now every
    argument is shown whole, and a call whose arguments are over what a question shows (8,000 characters) is
    refused unasked: the owner confirms only what they saw."""
    padded = f'"Anna Berg, my sister{" (who lives in Lisbon)" * 10}" <anna@example.org>, x@evil.example'
    assert len(padded) > 240
    start_bot(config_patch=lambda c: c.update(mail=mail_config(smtp)))
    send = {"action": "send", "to": padded, "subject": "Saturday", "body": "I'll come!"}
    chat_server.enqueue(json.dumps({"skill": "mail", "args": send}), json.dumps({"reply": "Sent."}))
    fake.send_message("tell Anna I'll come on Saturday")
    message, buttons = approval_question(fake)
    assert "x@evil.example" in message["text"], message["text"]  # what runs is what the owner was shown
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes")), message["message_id"])
    fake.wait_for(lambda: any("Sent." in t for t in texts(fake)), timeout=30)
    assert smtp.recipients == [["anna@example.org", "x@evil.example"]]

    # Too long to show whole: no question, nothing sent, and the model is told why.
    longer = dict(send, body="I'll come! " * 800)
    chat_server.enqueue(json.dumps({"skill": "mail", "args": longer}), json.dumps({"reply": "Not sent."}))
    fake.send_message("tell Anna again")
    fake.wait_for(lambda: any("Not sent." in t for t in texts(fake)), timeout=30)
    asked = [c for c in fake.calls("sendMessage") if "approve:" in json.dumps(c["params"].get("reply_markup"))]
    assert len(asked) == 1 and len(smtp.messages) == 1
    fed_back = chat_server.chat_requests[-1]["messages"][-1]["content"]
    assert "too long to show the owner whole" in fed_back, fed_back
