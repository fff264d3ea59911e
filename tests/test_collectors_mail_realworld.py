"""Mail collector on real-world and real-world-shaped mail over a real IMAP server (pymap): legacy
charsets, raw 8-bit headers, binary parts, undated mail (fixtures: tests/fixtures/realworld/README.md)."""

from __future__ import annotations

import base64
from datetime import datetime, timezone
from pathlib import Path

import pytest

from assistant_framework.collectors import CollectorManager, CollectorRunner
from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from tests.fakes.imap_server import FakeIMAPServer

PASSWORD = "s3cret-Pa55word"
REAL = Path(__file__).parent / "fixtures" / "realworld" / "mail"
OLE_MSG = (
    b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    + b"\x00" * 64
    + b"__substg1.0_0037001F\x00\x00Fwd: minutes"
    + b"\x00\x01\x02" * 300
)


@pytest.fixture(scope="module")
def imap_server():
    with FakeIMAPServer(user="alice", password=PASSWORD) as server:
        yield server


def collect(tmp_path, imap_server, monkeypatch, folder, messages):
    monkeypatch.setenv("TEST_MAIL_PASSWORD", PASSWORD)
    imap_server.create_folder(folder)
    uids = [imap_server.append(folder, raw, date_time=when) for raw, when in messages]
    ws = Workspace(tmp_path / "ws")
    config = {
        "runtime": {"timezone": "Europe/Berlin"},
        "collectors": {
            "mail": {
                "enabled": True,
                "host": "127.0.0.1",
                "port": imap_server.port,
                "security": "plain",
                "username": "alice",
                "password_env": "TEST_MAIL_PASSWORD",
                "folders": [folder],
            }
        },
    }
    manager = CollectorManager.from_settings(Settings.from_config(config).runtime, config.get("collectors"), ws)
    outcome = CollectorRunner(manager, ws, timezone="Europe/Berlin").run_once("mail")
    assert outcome.outcome == "ok", outcome.error
    by_uid = {item["uid"]: item for item in outcome.new_items}
    return ws, outcome, [by_uid[uid] for uid in uids]


def mime(headers: bytes, body: bytes) -> bytes:
    return (
        b"From: Ana <ana@example.org>\r\nTo: alice@example.org\r\nMessage-ID: <x@example.org>\r\n"
        + headers
        + b"\r\n"
        + body
    )


def test_legacy_charsets_in_headers_and_bodies(tmp_path, imap_server, monkeypatch):
    # Older Outlook: raw 8-bit ISO-8859-1 in the Subject, no encoded word.
    raw_header = mime(
        b"Subject: Fr\xf6sche im Teich\r\nDate: Mon, 06 Jan 2025 10:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n",
        b"Die Fr\xf6sche quaken.\r\n",
    )
    # Labelled GB2312, written in GBK (the third character is not in GB2312).
    gbk = "朱镕基的会议".encode("gbk")
    gb_label = mime(
        b"Subject: =?GB2312?B?"
        + base64.b64encode(gbk)
        + b"?=\r\nDate: Mon, 06 Jan 2025 11:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=GB2312\r\nContent-Transfer-Encoding: 8bit\r\n",
        gbk + b"\r\n",
    )
    # A real spam mail (mail-parser corpus): labelled GB2312, the body is UTF-8.
    real = (REAL / "mail_test_12").read_bytes()
    ws, outcome, items = collect(
        tmp_path, imap_server, monkeypatch, "Charsets", [(raw_header, None), (gb_label, None), (real, None)]
    )
    assert items[0]["subject"] == "Frösche im Teich"
    assert items[1]["subject"] == "朱镕基的会议" and items[1]["snippet"] == "朱镕基的会议"
    assert items[2]["subject"] == "代开各地增值税发票" and items[2]["snippet"].startswith("你好")
    text = "".join(ws.read_text(item["file"]) for item in items)
    assert "\ufffd" not in text and "Die Frösche quaken." in text
    assert not any("replaced with U+FFFD" in e for e in outcome.errors)


def test_binary_parts_are_attachments_never_text(tmp_path, imap_server, monkeypatch):
    boundary = b"XYZ"
    encoded = base64.encodebytes(OLE_MSG)
    raw = mime(
        b"Subject: Fwd: minutes\r\nDate: Mon, 06 Jan 2025 12:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="XYZ"\r\n',
        b"--"
        + boundary
        + b"\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + encoded
        + b"--"
        + boundary
        + b"\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>See the <b>minutes</b> attached.</p>\r\n"
        + b"--"
        + boundary
        + b'\r\nContent-Type: text/plain; name="minutes.msg"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
        + encoded
        + b"--"
        + boundary
        + b"--\r\n",
    )
    ws, outcome, items = collect(tmp_path, imap_server, monkeypatch, "Binary", [(raw, None)])
    stored = ws.read_text(items[0]["file"])
    assert "\x00" not in stored and "__substg1" not in stored
    assert "See the minutes attached." in stored
    assert sorted(items[0]["attachments"]) == [f"(unnamed text/plain, {len(OLE_MSG)} bytes)", "minutes.msg"]


def test_undated_mail_uses_the_servers_internaldate(tmp_path, imap_server, monkeypatch):
    raw = mime(b"Subject: no date\r\nContent-Type: text/plain\r\n", b"hello\r\n")
    received = datetime(2025, 1, 6, 23, 30, tzinfo=timezone.utc)
    ws, outcome, items = collect(tmp_path, imap_server, monkeypatch, "Undated", [(raw, received)])
    assert items[0]["date"] == "2025-01-07T00:30:00+01:00"
    assert items[0]["file"].endswith(f"/2025-01-07-{items[0]['uid']}.md")


def test_what_cannot_be_decoded_is_replaced_and_counted(monkeypatch):
    from collectors.mail import charsets

    assert charsets.decode_bytes("Fröschе".encode("utf-8"), "iso-8859-1").text == "Fröschе"
    assert charsets.decode_bytes(b"\x80 caf\xe9", "iso-8859-1").text == "€ café"  # windows-1252, not C1 controls
    monkeypatch.setattr(charsets, "chardet", None)  # no detector: the last resort
    decoded = charsets.decode_bytes(b"ab\xff\xfecd", "utf-8")
    assert decoded.text == "ab\ufffd\ufffdcd" and decoded.replaced == 2
