"""Mutations of the email channel (messaging_llm_bot/channels/email/)."""

from __future__ import annotations

from mutation_list.common import BOT, EMAIL, KIT_EMAIL, PAIRING, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "email-trusts-any-from",
        f"{BOT}/channels/email/intake.py",
        '        if settings.trust != "any":',
        '        if settings.trust == "any":',
        "a mail with the owner's From and no passing Authentication-Results is answered as the owner's",
        EMAIL,
    ),
    Mutation(
        "email-dkim-unaligned",
        f"{BOT}/channels/email/authres.py",
        '        if method == "dkim" and _aligned(signer, domain):',
        '        if method == "dkim":',
        "a DKIM pass for any domain proves any From address",
        EMAIL,
    ),
    Mutation(
        "email-spf-unaligned",
        f"{BOT}/channels/email/authres.py",
        '        if method == "spf" and _aligned(_domain(props.get("smtp.mailfrom", "")), domain):',
        '        if method == "spf":',
        "an SPF pass for any envelope sender proves any From address",
        EMAIL,
    ),
    Mutation(
        "email-lower-header-trusted",
        f"{BOT}/channels/email/authres.py",
        "    for header in headers:",
        "    for header in reversed(headers):",
        "the sender's own Authentication-Results, added below the receiving server's, is believed",
        EMAIL,
    ),
    Mutation(
        "email-stranger-answered",
        f"{BOT}/channels/email/intake.py",
        "        if not mail.sender or mail.sender not in allowed or mail.sender == settings.address.strip().lower():",
        "        if not mail.sender or mail.sender == settings.address.strip().lower():",
        "a stranger's mail reaches the model and is answered (backscatter)",
        EMAIL,
    ),
    Mutation(
        "email-automated-answered",
        f"{BOT}/channels/email/intake.py",
        "        if mail.automated:",
        "        if False:",
        "an auto-reply, a bounce or a list mail is answered: two robots answer each other",
        EMAIL,
    ),
    Mutation(
        "email-guest-is-owner",
        f"{BOT}/channels/email/turn.py",
        "        owner_chat = mail.sender == settings.owner_address",
        "        owner_chat = True",
        "an allowed guest's mail gets the owner's notes, facts, skills and confirmation questions",
        EMAIL,
    ),
    Mutation(
        "email-html-unescaped",
        f"{BOT}/channels/email/format.py",
        '        out.append("<br>\\n" if ch == "\\n" else html.escape(ch))',
        '        out.append("<br>\\n" if ch == "\\n" else ch)',
        "the model's text becomes markup in the reply's HTML part",
        EMAIL,
    ),
    Mutation(
        "email-no-replay",
        f"{BOT}/channels/email/service.py",
        "        self._replay(inbox, turns)",
        "        pass",
        "a mail stored before a crash or a stop mid-turn is never answered",
        EMAIL,
    ),
    Mutation(
        "email-dropped-connection-reported",
        f"{BOT}/channels/email/servers.py",
        "        for fresh in (self._conn is None, True):",
        "        for fresh in (True, True):",
        "an IMAP connection the server closed while idle is an outage in the log at each look, not reopened",
        EMAIL,
    ),
    Mutation(
        "busy-email-never-joins",
        f"{BOT}/channels/email/service.py",
        "            if item is not None and not turns.join_running(item):",
        "            if item is not None:",
        "busy mode steer does nothing by email: a second mail in the thread gets a reply of its own",
        ("test_email_process.py", *KIT_EMAIL),
    ),
    Mutation(
        "email-pairing-code-to-forged-sender",
        f"{BOT}/channels/email/intake.py",
        '        return settings.trust != "any" and verdict('
        "mail.auth_results, mail.sender, settings.authserv_id).passed",
        "        return True",
        "a pairing code is mailed to whatever From a stranger's mail claims (backscatter to a forged sender)",
        PAIRING,
    ),
)
