"""The email channel (channels/email/) in process against a real IMAP server (pymap) and a real SMTP server
(aiosmtpd): the owner's proven mail is answered once, in its thread, plain text and HTML; an unproven one,
a stranger's and an automated one are not answered at all; a reply in the thread keeps the conversation."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from tests.email_harness import BOT, FRIEND, OWNER, body, mail, wait_mails
from tests.waiting import wait_until


def test_the_owners_proven_mail_gets_one_threaded_reply(start_email, email_imap, email_smtp, chat_server):
    chat_server.enqueue('{"reply": "**Paris** is the capital."}')
    start_email()
    email_imap.append("INBOX", mail("What is the capital of France?", message_id="<cap-1@example.org>"))
    [reply] = wait_mails(email_smtp, 1)
    assert reply["In-Reply-To"] == "<cap-1@example.org>" and reply["References"] == "<cap-1@example.org>"
    assert reply["Subject"] == "Re: A question" and reply["From"] == BOT and reply["Auto-Submitted"] == "auto-replied"
    assert email_smtp.recipients == [[OWNER]]
    assert body(reply).strip() == "Paris is the capital."
    html = reply.get_body(preferencelist=("html",))
    assert html is not None and "<b>Paris</b>" in html.get_content()
    [request] = chat_server.chat_requests
    assert "What is the capital of France?" in str(request["messages"][-1])


FORGED_BELOW = "mx.example.org; dkim=fail header.d=example.org; spf=fail smtp.mailfrom=evil.example"


def test_mail_not_proven_by_the_receiving_server_is_not_the_owners(start_email, email_imap, email_smtp, chat_server):
    chat_server.enqueue('{"reply": "pong"}')
    start_email()
    unproven = [
        mail("no result at all", message_id="<u1@example.org>", auth=None),
        mail(
            "a pass for another domain",
            message_id="<u2@example.org>",
            auth="mx.example.org; dkim=pass header.d=evil.example",
        ),
        mail(
            "a softfail", message_id="<u3@example.org>", auth="mx.example.org; spf=softfail smtp.mailfrom=example.org"
        ),
    ]
    # The receiving server's result on top says fail; the sender's own forged "pass" lower down is not read.
    forged = mail("forged below", message_id="<u4@example.org>", auth=FORGED_BELOW)
    forged = forged.replace(
        b"From:", b"Authentication-Results: mx.example.org; dkim=pass header.d=example.org\nFrom:", 1
    )
    for raw in [*unproven, forged]:
        email_imap.append("INBOX", raw)
    email_imap.append("INBOX", mail("ping", message_id="<u5@example.org>"))
    [reply] = wait_mails(email_smtp, 1)
    assert reply["In-Reply-To"] == "<u5@example.org>"
    assert len(chat_server.chat_requests) == 1 and "ping" in str(chat_server.chat_requests[0]["messages"][-1])


def test_spf_pass_proves_the_sender_and_authserv_id_picks_the_providers_header(
    start_email, email_imap, email_smtp, chat_server
):
    chat_server.enqueue('{"reply": "one"}', '{"reply": "two"}')
    start_email(authserv_id="mx.example.org")
    spf = "mx.example.org; spf=pass smtp.mailfrom=owner@example.org"
    email_imap.append("INBOX", mail("by spf", message_id="<s1@example.org>", auth=spf))
    wait_mails(email_smtp, 1)
    # Another server's pass on top is not the provider's result; the provider's below says fail.
    other = mail("other server", message_id="<s2@example.org>", auth=FORGED_BELOW)
    other = other.replace(
        b"Authentication-Results:",
        b"Authentication-Results: relay.evil.example; dkim=pass header.d=example.org\nAuthentication-Results:",
        1,
    )
    email_imap.append("INBOX", other)
    email_imap.append("INBOX", mail("by dkim", message_id="<s3@example.org>"))
    wait_mails(email_smtp, 2)
    assert [m["In-Reply-To"] for m in email_smtp.messages] == ["<s1@example.org>", "<s3@example.org>"]
    assert len(chat_server.chat_requests) == 2


def test_an_automated_mail_is_never_answered(start_email, email_imap, email_smtp, chat_server):
    chat_server.enqueue('{"reply": "pong"}')
    start_email()
    for n, headers in enumerate(
        [
            {"Auto-Submitted": "auto-replied"},
            {"Precedence": "bulk"},
            {"List-Id": "<news.example.org>"},
            {"Return-Path": "<>"},
        ]
    ):
        email_imap.append("INBOX", mail("I am away", message_id=f"<auto-{n}@example.org>", headers=headers))
    email_imap.append("INBOX", mail("ping", message_id="<human@example.org>", headers={"Auto-Submitted": "no"}))
    [reply] = wait_mails(email_smtp, 1)
    assert reply["In-Reply-To"] == "<human@example.org>" and len(chat_server.chat_requests) == 1


def test_a_reply_in_the_thread_continues_its_conversation_and_a_new_thread_starts_one(
    start_email, email_imap, email_smtp, chat_server
):
    chat_server.enqueue('{"reply": "Paris."}', '{"reply": "Rome."}', '{"reply": "Hello."}')
    start_email()
    email_imap.append("INBOX", mail("Capital of France?", message_id="<t1@example.org>"))
    [first] = wait_mails(email_smtp, 1)
    thread = {"In-Reply-To": first["Message-ID"], "References": f"{first['References']} {first['Message-ID']}"}
    email_imap.append(
        "INBOX",
        mail(
            "And of Italy?\n\nOn Wed, Dec 2, 2026 assistant wrote:\n> Paris.",
            message_id="<t2@example.org>",
            subject="Re: A question",
            headers=thread,
        ),
    )
    second = wait_mails(email_smtp, 2)[1]
    assert second["References"].split() == ["<t1@example.org>", first["Message-ID"], "<t2@example.org>"]
    assert second["Subject"] == "Re: A question"
    email_imap.append("INBOX", mail("Something else", message_id="<n1@example.org>", subject="New"))
    wait_mails(email_smtp, 3)
    in_thread, new_thread = (json.dumps(r["messages"]) for r in chat_server.chat_requests[1:])
    assert "Capital of France?" in in_thread and "Paris." in in_thread and "> Paris." not in in_thread
    assert "Capital of France?" not in new_thread


def test_a_guests_mail_is_answered_as_a_guest(start_email, email_imap, email_smtp, chat_server, workspace):
    workspace.write_text("notes/important.md", "# Important\n")
    chat_server.enqueue(
        '{"skill": "file", "args": {"action": "delete", "path": "notes/important.md"}}', '{"reply": "Not done."}'
    )
    start_email()
    proven = "mx.example.net; dkim=pass header.d=example.net"
    email_imap.append(
        "INBOX", mail("delete notes/important.md", sender=FRIEND, message_id="<g1@example.net>", auth=proven)
    )
    [reply] = wait_mails(email_smtp, 1)
    assert body(reply).strip() == "Not done." and email_smtp.recipients == [[FRIEND]]  # no question to confirm
    assert workspace.exists("notes/important.md")


def test_a_reminder_set_in_a_mail_thread_is_mailed_to_its_sender(start_email, email_smtp, workspace):
    from assistant_framework.stores.reminders import ReminderStore

    ReminderStore(workspace).add(
        f"mail:{OWNER}:0123456789ab", "Call Anna", datetime.now(timezone.utc) - timedelta(seconds=5), "Europe/Berlin"
    )
    start_email()
    [sent] = wait_mails(email_smtp, 1)
    assert sent["Subject"] == "Reminder" and email_smtp.recipients == [[OWNER]] and "Call Anna" in body(sent)


def test_a_job_of_the_email_channel_is_mailed_to_the_owner_once(start_email, email_smtp, chat_server, workspace):
    from assistant_framework.jobs import JOBS_FILE, RUNS_FILE

    created = (datetime.now(timezone.utc) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
    row = {"id": "j1", "name": "stretch", "every_minutes": 60, "created_at": created, "message": "Stretch"}
    workspace.write_json(JOBS_FILE, [{**row, "chat_id": f"mail:{OWNER}"}])
    start_email(patch=lambda config: config.update(jobs={"poll_seconds": 0.1}))
    [sent] = wait_mails(email_smtp, 1)
    assert email_smtp.recipients == [[OWNER]] and "Stretch" in body(sent) and sent["In-Reply-To"] is None
    wait_until(lambda: len(workspace.read_jsonl(RUNS_FILE)) == 1, what="the run's line")
    assert workspace.read_jsonl(RUNS_FILE)[0]["outcome"] == "delivered" and chat_server.chat_requests == []


def test_a_file_the_model_sends_arrives_attached_in_the_thread(
    start_email, email_imap, email_smtp, chat_server, workspace
):
    workspace.path("exports").mkdir()
    workspace.path("exports/expenses.csv").write_bytes(b"date,amount\n2026-11-02,12.50\n")
    call = {"skill": "send_file", "args": {"path": "exports/expenses.csv", "caption": "November"}}
    chat_server.enqueue(json.dumps(call), '{"reply": "Sent."}')
    start_email()
    email_imap.append("INBOX", mail("send me November's expenses", message_id="<f1@example.org>"))
    upload, reply = wait_mails(email_smtp, 2)
    [attached] = list(upload.iter_attachments())
    assert attached.get_filename() == "expenses.csv" and attached.get_content() == "date,amount\n2026-11-02,12.50\n"
    assert body(upload).strip() == "November" and upload["In-Reply-To"] == "<f1@example.org>"
    assert body(reply).strip() == "Sent." and reply["In-Reply-To"] == "<f1@example.org>"
