"""The email channel's pure parts: Authentication-Results read as RFC 8601 says (only the receiving server's
header, aligned domains), a mail's own words without the quoted history, the reply's HTML with nothing of
the model's text as markup, and files out as attachments."""

from __future__ import annotations

from pathlib import Path

import pytest

from messaging_llm_bot.channels.contract import OutgoingFile
from messaging_llm_bot.channels.email.authres import verdict
from messaging_llm_bot.channels.email.format import html_body
from messaging_llm_bot.channels.email.mailitem import address_of
from messaging_llm_bot.channels.email.message import Thread, compose, parse, without_quote

OWNER = "owner@example.org"


def test_dkim_or_spf_pass_counts_only_for_the_from_domain() -> None:
    assert verdict(["mx; dkim=pass (good) header.d=example.org"], OWNER).passed
    assert verdict(["mx; dkim=pass header.i=@mail.example.org"], "a@mail.example.org").passed
    assert verdict(["mx; spf=pass smtp.mailfrom=bounce@example.org"], OWNER).passed
    assert not verdict(["mx; dkim=pass header.d=example.org.evil.example"], OWNER).passed
    assert not verdict(["mx; dkim=pass header.d=notexample.org"], OWNER).passed
    assert not verdict(["mx; spf=pass smtp.mailfrom=evil.example; dkim=neutral header.d=example.org"], OWNER).passed
    assert not verdict(["mx; dkim=pass header.d=example.org"], "no-address").passed
    assert not verdict([], OWNER).passed


def test_only_the_topmost_or_the_named_servers_header_is_read() -> None:
    forged_below = ["mx; dkim=fail header.d=example.org", "mx; dkim=pass header.d=example.org"]
    assert not verdict(forged_below, OWNER).passed
    other_on_top = ["relay.evil; dkim=pass header.d=example.org", "mx.example.org; dkim=fail header.d=example.org"]
    assert not verdict(other_on_top, OWNER, "mx.example.org").passed
    assert verdict(
        other_on_top[::-1][1:] + ["mx.example.org; spf=pass smtp.mailfrom=example.org"], OWNER, "mx.example.org"
    ).passed
    assert (
        "no Authentication-Results header from mx.example.org"
        in verdict(other_on_top[:1], OWNER, "mx.example.org").reason
    )
    # A comment or a quoted string cannot smuggle a result in.
    assert not verdict(["mx; dkim=fail (dkim=pass header.d=example.org) header.d=example.org"], OWNER).passed


def test_a_reply_is_its_own_words_without_the_quoted_history() -> None:
    assert without_quote("Yes.\n\nOn Mon, 1 Dec 2026 the assistant wrote:\n> Confirm?\n> more") == "Yes."
    assert without_quote("Ja\n\nAm 1.12.2026 schrieb Assistent <a@example.org>:\n> Frage") == "Ja"
    assert without_quote("Fine.\n> quoted\n>\n") == "Fine."
    assert without_quote("On my way I wrote: a poem\nand more") == "On my way I wrote: a poem\nand more"


def test_the_html_part_escapes_the_models_text_and_keeps_only_safe_links() -> None:
    html = html_body("**bold** <img src=x onerror=alert(1)> & 1 < 2 [a](https://x.org/?a=1&b=2) [b](javascript:x)")
    assert "<b>bold</b>" in html and "&amp; 1 &lt; 2" in html
    assert "<img" not in html and "onerror" not in html  # HTML in the model's Markdown is never markup
    assert '<a href="https://x.org/?a=1&amp;b=2">a</a> b</div>' in html and "javascript:" not in html


def test_a_reply_carries_files_as_attachments_and_its_thread(tmp_path: Path) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4 report")
    out = compose(
        sender="assistant@example.org",
        to=OWNER,
        markdown="Here it is.",
        thread=Thread("<m1@example.org>", "Re: Report", ("<root@example.org>",)),
        message_id="<r1@example.org>",
        files=(OutgoingFile("file", report),),
    )
    back = parse(out.as_bytes())
    assert back.in_reply_to == "<m1@example.org>" and back.references == ("<root@example.org>", "<m1@example.org>")
    assert out["Subject"] == "Re: Report"  # no "Re: Re:"
    assert [(a.name, a.mime, a.data) for a in back.attachments] == [
        ("report.pdf", "application/pdf", b"%PDF-1.4 report")
    ]
    assert back.text == "Here it is."


def test_a_conversation_names_the_address_its_mail_goes_to() -> None:
    assert address_of("mail:owner@example.org:0123456789ab") == OWNER
    assert address_of("mail:owner@example.org") == OWNER


def test_a_kept_imap_connection_the_server_dropped_is_opened_again_not_reported(email_imap) -> None:
    from assistant_framework.config.settings.email import ImapSettings
    from messaging_llm_bot.channels.email.servers import Mailbox, MailServerError
    from tests.email_harness import PASSWORD

    settings = ImapSettings(
        host="127.0.0.1", port=email_imap.port, security="none", user=email_imap.user, password=PASSWORD
    )
    mailbox = Mailbox(settings, "INBOX", 1_000_000)
    try:
        first = mailbox.poll(None, None)
        conn = mailbox.connect()
        conn.shutdown()  # the server's side of an idle timeout: the kept socket is gone
        assert mailbox.poll(first.uidvalidity, first.highest).uidvalidity == first.uidvalidity
        wrong = Mailbox(ImapSettings(**{**vars(settings), "password": "wrong"}), "INBOX", 1_000_000)
        with pytest.raises(MailServerError, match="refused the login"):
            wrong.poll(None, None)  # a fresh connection that fails is reported at once
    finally:
        mailbox.close()
