"""The doctor's email checks, when ``email.enabled``: the IMAP server answers and takes the login and the
folder opens, the SMTP server answers and takes the login (through the channel's own code), the allowlist is
set, and ``email.trust: "any"`` is said loudly (anyone can write a From header)."""

from __future__ import annotations

from assistant_framework.hints import CLI
from messaging_llm_bot.channels.email.servers import Mailbox, MailServerError, check_smtp
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, WARN, Check, Context, allowed_check


def checks(ctx: Context) -> list[Check]:
    email = ctx.settings.email
    if not email.enabled:
        return []
    found: list[Check] = []
    mailbox = Mailbox(email.imap, email.folder, email.max_mail_bytes)
    fix = "check email.{} (host, port, security, ca_file, user, password) (docs/email.md)"
    try:
        batch = mailbox.poll(None, None)
        opens = f"{email.folder} opens (UIDVALIDITY {batch.uidvalidity})"
        found.append(Check("email imap", OK, f"{mailbox.where}: logged in as {email.imap.user!r}; {opens}"))
    except MailServerError as err:
        found.append(Check("email imap", FAIL, str(err), fix.format("imap")))
    finally:
        mailbox.close()
    try:
        check_smtp(email.smtp)
        found.append(Check("email smtp", OK, f"SMTP {email.smtp.host}:{email.smtp.port} answers and takes the login"))
    except MailServerError as err:
        found.append(Check("email smtp", FAIL, str(err), fix.format("smtp")))
    means = "the assistant answers no one's mail"
    found.append(allowed_check("email.allowed", "you@example.org", email.allowed, email.owner_address, means))
    if email.trust != "any":
        where = email.authserv_id or "the topmost header"
        ok = f"a sender counts only with dkim or spf pass in Authentication-Results ({where})"
        return [*found, Check("email trust", OK, ok)]
    return [
        *found,
        Check(
            "email trust",
            WARN,
            'email.trust is "any": ANYONE can write a From header, so a forged mail "from" the owner gets '
            "the owner's notes, facts and skills",
            f'`{CLI} config set email.trust "auth-results"` (your provider adds Authentication-Results)',
        ),
    ]
