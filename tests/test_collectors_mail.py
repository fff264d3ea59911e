"""The built-in mail collector against a real IMAP server (pymap) on 127.0.0.1."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.collectors.state import load_state
from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from tests.fakes.imap_server import FakeIMAPServer, make_self_signed_cert

PASSWORD = "s3cret-Pa55word"


def plain_message(
    subject: str,
    sender: str = "Landlord <landlord@example.org>",
    body: str = "The rent is due.",
    date: str = "Mon, 06 Jan 2025 23:30:00 +0000",
) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "Alice <alice@example.org>"
    msg["Subject"] = subject
    msg["Date"] = date
    msg["Message-ID"] = f"<{abs(hash(subject))}@example.org>"
    msg.set_content(body)
    return msg.as_bytes()


def html_message_with_attachment() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Shop <orders@shop.example>"
    msg["To"] = "alice@example.org"
    msg["Subject"] = "Your invoice"
    msg["Date"] = "Tue, 07 Jan 2025 10:00:00 +0100"
    msg.set_content(
        "<html><body><p>Thanks for your "
        "<b>order</b>!</p><ul><li>Tea</li><li>Cups</li></ul><script>x()</script></body></html>",
        subtype="html",
    )
    msg.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="invoice-42.pdf")
    return msg.as_bytes()


@pytest.fixture(scope="module")
def imap_server():
    with FakeIMAPServer(user="alice", password=PASSWORD) as server:
        yield server


def mail_config(server, **extra):
    return {
        "runtime": {"timezone": "Europe/Berlin"},
        "collectors": {
            "mail": {
                "enabled": True,
                "host": "127.0.0.1",
                "port": server.port,
                "security": "plain",
                "username": "alice",
                "password_env": "TEST_MAIL_PASSWORD",
                **extra,
            }
        },
    }


def make_runner(ws, config, **kw):
    manager = CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), ws)
    assert "mail" in manager.collectors, manager.errors
    return CollectorRunner(manager, ws, timezone="Europe/Berlin", **kw)


def all_workspace_text(ws) -> str:
    return "\n".join(ws.path(rel).read_text(encoding="utf-8", errors="replace") for rel in ws.list("**/*"))


def test_messages_become_markdown_files_incrementally(tmp_path, imap_server, monkeypatch):
    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    imap_server.create_folder("Orders")
    uid1 = imap_server.append("INBOX", plain_message("Rent for January"))
    uid2 = imap_server.append("Orders", html_message_with_attachment())
    ws = Workspace(tmp_path / "ws")
    runner = make_runner(ws, mail_config(imap_server, folders=["INBOX", "Orders"]))

    first = runner.run_once("mail")
    assert first.outcome == "ok", first.error
    subjects = [i["subject"] for i in first.new_items]
    assert "Rent for January" in subjects and "Your invoice" in subjects
    # 23:30 UTC on the 6th is the 7th in Berlin: the file is named by local date.
    rent = ws.read_text(f"collectors/mail/INBOX/2025-01-07-{uid1}.md")
    assert rent.startswith("# Rent for January\n")
    assert "- From: Landlord <landlord@example.org>" in rent
    assert "- Date: 2025-01-07T00:30:00+01:00" in rent
    assert "The rent is due." in rent
    invoice = ws.read_text(f"collectors/mail/Orders/2025-01-07-{uid2}.md")
    assert "- Attachments: invoice-42.pdf" in invoice
    assert "Thanks for your order!" in invoice and "- Tea" in invoice
    assert "<b>" not in invoice and "x()" not in invoice
    index = ws.read_jsonl("collectors/mail/index.jsonl")
    assert {r["file"] for r in index} == {
        f"collectors/mail/INBOX/2025-01-07-{uid1}.md",
        f"collectors/mail/Orders/2025-01-07-{uid2}.md",
    }

    # Nothing new: nothing written again.
    second = runner.run_once("mail")
    assert second.outcome == "ok" and second.new_items == [] and second.written == []

    # One new message in INBOX: only it is collected, also by a fresh runner (restart).
    uid3 = imap_server.append("INBOX", plain_message("Heating repair", date="Wed, 08 Jan 2025 09:00:00 +0000"))
    third = make_runner(ws, mail_config(imap_server, folders=["INBOX", "Orders"])).run_once("mail")
    assert [i["uid"] for i in third.new_items] == [uid3]
    assert third.written == ["collectors/mail/INBOX/2025-01-08-%d.md" % uid3, "collectors/mail/index.jsonl"]
    cursor = load_state(ws, "mail").cursor["folders"]
    assert cursor["INBOX"]["last_uid"] == uid3

    # Collecting never marks mail as read.
    conn = imap_server.client()
    try:
        conn.select("INBOX", readonly=True)
        status, data = conn.uid("SEARCH", None, "UNSEEN")
        assert str(uid3).encode() in data[0].split()
    finally:
        conn.logout()

    # The password is nowhere in the workspace (outputs, state, runs).
    assert PASSWORD not in all_workspace_text(ws)


def test_uidvalidity_change_restarts_the_folder(tmp_path, imap_server, monkeypatch):
    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    imap_server.create_folder("Rebuilt")
    imap_server.append("Rebuilt", plain_message("Before rebuild"))
    ws = Workspace(tmp_path / "ws")
    runner = make_runner(ws, mail_config(imap_server, folders=["Rebuilt"]))
    assert [i["subject"] for i in runner.run_once("mail").new_items] == ["Before rebuild"]
    old_validity = load_state(ws, "mail").cursor["folders"]["Rebuilt"]["uidvalidity"]

    imap_server.recreate_folder("Rebuilt")
    imap_server.append("Rebuilt", plain_message("After rebuild"))
    assert imap_server.uidvalidity("Rebuilt") != old_validity
    outcome = runner.run_once("mail")
    assert [i["subject"] for i in outcome.new_items] == ["After rebuild"]
    assert any("UIDVALIDITY changed" in e for e in outcome.errors)
    assert load_state(ws, "mail").cursor["folders"]["Rebuilt"]["uidvalidity"] == imap_server.uidvalidity("Rebuilt")


def test_wrong_password_fails_without_leaking_it(tmp_path, imap_server, monkeypatch):
    monkeypatch.setenv("TEST_MAIL_PASSWORD", "wrong-" + PASSWORD)
    ws = Workspace(tmp_path / "ws")
    outcome = make_runner(ws, mail_config(imap_server)).run_once("mail")
    assert outcome.outcome == "error"
    assert "login as 'alice' failed" in outcome.error
    assert PASSWORD not in outcome.error
    assert PASSWORD not in all_workspace_text(ws)
    assert load_state(ws, "mail").consecutive_failures == 1


def test_missing_password_env_names_the_variable(tmp_path, imap_server, monkeypatch):
    monkeypatch.delenv("TEST_MAIL_PASSWORD", raising=False)
    ws = Workspace(tmp_path / "ws")
    outcome = make_runner(ws, mail_config(imap_server)).run_once("mail")
    assert outcome.outcome == "error"
    assert "TEST_MAIL_PASSWORD" in outcome.error


def test_a_missing_folder_does_not_stop_the_others(tmp_path, imap_server, monkeypatch):
    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    imap_server.create_folder("Kept")
    imap_server.append("Kept", plain_message("Still here"))
    ws = Workspace(tmp_path / "ws")
    outcome = make_runner(ws, mail_config(imap_server, folders=["NoSuchFolder", "Kept"])).run_once("mail")
    assert outcome.outcome == "ok"
    assert [i["subject"] for i in outcome.new_items] == ["Still here"]
    assert any("NoSuchFolder" in e for e in outcome.errors)


def test_folder_names_with_non_ascii_letters(tmp_path, imap_server, monkeypatch, capsys):
    """IMAP names folders in modified UTF-7 ("Entwürfe" is "Entw&APw-rfe" on the wire): a folder
    configured as the user reads it is found, setup lists names readably, and a name already in
    the wire form (as setup printed it before) or with a plain "&" still works."""
    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    for wire in ("Entw&APw-rfe", "&BB4EQgQ,BEAEMAQyBDsENQQ9BD0ESwQ1-", "R&-D"):
        imap_server.create_folder(wire)
    imap_server.append("Entw&APw-rfe", plain_message("Draft reply"))
    imap_server.append("&BB4EQgQ,BEAEMAQyBDsENQQ9BD0ESwQ1-", plain_message("Sent report"))
    imap_server.append("R&-D", plain_message("Prototype"))
    ws = Workspace(tmp_path / "ws")
    config = mail_config(imap_server, folders=["Entwürfe", "Отправленные", "R&D"])
    outcome = make_runner(ws, config).run_once("mail")
    assert outcome.outcome == "ok", outcome.error
    assert sorted(i["subject"] for i in outcome.new_items) == ["Draft reply", "Prototype", "Sent report"]
    assert outcome.errors == []
    wire = make_runner(Workspace(tmp_path / "ws2"), mail_config(imap_server, folders=["Entw&APw-rfe"])).run_once("mail")
    assert [i["subject"] for i in wire.new_items] == ["Draft reply"]

    from collectors.mail import setup

    assert setup(config["collectors"]["mail"], ws) == 0
    listed = capsys.readouterr().out
    assert "  Entwürfe\n" in listed and "  Отправленные\n" in listed and "  R&D\n" in listed


def test_sender_notify_rule(tmp_path, imap_server, monkeypatch):
    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    imap_server.create_folder("Notify")
    imap_server.append("Notify", plain_message("Quarterly numbers", sender="Boss <boss@example.org>"))
    imap_server.append("Notify", plain_message("Newsletter", sender="news@spam.example"))
    ws = Workspace(tmp_path / "ws")
    pushed = []
    config = mail_config(imap_server, folders=["Notify"], notify=[{"match": "sender", "value": "boss@example.org"}])
    make_runner(ws, config, notify=lambda name, text: pushed.append((name, text))).run_once("mail")
    assert pushed == [("mail", "mail: 1 new matching item\n- Quarterly numbers (Boss <boss@example.org>)")]


@pytest.mark.parametrize("security", ["starttls", "tls"])
def test_tls_modes_against_a_self_signed_server(tmp_path, monkeypatch, security):
    made = make_self_signed_cert(tmp_path)
    if made is None:
        pytest.skip("openssl binary not available to make a test certificate")
    cert, key = made
    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    with FakeIMAPServer(user="alice", password=PASSWORD, security=security, cert_file=cert, key_file=key) as server:
        server.append("INBOX", plain_message(f"Over {security}"))
        ws = Workspace(tmp_path / "ws")
        outcome = make_runner(ws, mail_config(server, security=security, ca_file=str(cert))).run_once("mail")
        assert outcome.outcome == "ok", outcome.error
        assert [i["subject"] for i in outcome.new_items] == [f"Over {security}"]
        # Without the CA the certificate is refused (verification is on by default).
        refused = make_runner(Workspace(tmp_path / "ws2"), mail_config(server, security=security)).run_once("mail")
        assert refused.outcome == "error" and "cannot connect" in refused.error


def test_list_and_automated_mail_is_marked_bulk(tmp_path, imap_server, monkeypatch):
    """Newsletters (List-Unsubscribe, List-Id), bulk Precedence and automated mail (Auto-Submitted)
    carry ``bulk``: an ``ask`` rule short of budget asks them last (collectors/triage.py)."""
    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    imap_server.create_folder("Sorted")
    headers = {
        "Weekly deals": {"List-Unsubscribe": "<mailto:leave@shop.example>"},
        "Club news": {"List-Id": "<club.lists.example.org>"},
        "Bulk offer": {"Precedence": "bulk"},
        "Out of office": {"Auto-Submitted": "auto-replied"},
        "Dinner on Friday?": {"Auto-Submitted": "no"},
        "Lunch?": {},
    }
    for subject, extra in headers.items():
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = "Someone <someone@example.org>", "alice@example.org", subject
        msg["Date"] = "Mon, 06 Jan 2025 10:00:00 +0000"
        for key, value in extra.items():
            msg[key] = value
        msg.set_content("text")
        imap_server.append("Sorted", msg.as_bytes())
    outcome = make_runner(Workspace(tmp_path / "ws"), mail_config(imap_server, folders=["Sorted"])).run_once("mail")
    assert outcome.outcome == "ok", outcome.error
    bulk = {item["subject"]: bool(item.get("bulk")) for item in outcome.new_items}
    assert bulk == {
        "Weekly deals": True,
        "Club news": True,
        "Bulk offer": True,
        "Out of office": True,
        "Dinner on Friday?": False,
        "Lunch?": False,
    }


def test_memory_search_finds_a_collected_mail_once(tmp_path, imap_server, monkeypatch, capsys):
    """A mail is one hit, its Markdown file: `index.jsonl` (the collector's catalogue of the files it wrote,
    subject and snippet again) is not memory. It was found twice: the file and its catalogue line."""
    import json
    import shutil
    from pathlib import Path

    from messaging_llm_bot.cli.main import main

    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    uid = imap_server.append("INBOX", plain_message("Boiler service next Thursday", body="The plumber comes at 9."))
    config = tmp_path / "config"
    shutil.copytree(Path(__file__).resolve().parents[1] / "config", config, ignore=shutil.ignore_patterns("local"))
    (config / "collectors" / "mail.json").write_text(json.dumps(mail_config(imap_server)["collectors"]["mail"]))
    ws = Workspace(tmp_path / "ws")
    opts = ["--config", str(config), "--workspace", str(ws.root)]
    assert main(["collectors", "run", "mail", *opts]) == 0
    capsys.readouterr()
    assert main(["memory", "search", "boiler service", "--json", *opts]) == 0
    hits = [h for h in json.loads(capsys.readouterr().out) if "Boiler" in h["snippet"] or "boiler" in h["snippet"]]
    assert [h["path"] for h in hits] == ws.list(f"collectors/mail/INBOX/*-{uid}.md"), hits
    assert ws.read_jsonl("collectors/mail/index.jsonl")  # still written, for the collector and its readers
