"""Each fetched mail: judged, then stored in the durable inbox before the cursor passes it.

In this order, and nothing is done before the allowlist: the sender must be allowed (a stranger's mail is not
answered, so no backscatter: logged once per address; with pairing on, a stranger whose own provider proves them, in
a mail of a person's, gets a pairing code at most once an hour, conversation/pairing.py); an automated mail (a
bounce, a list, an auto-reply) is never answered; the sender must be proven by the receiving server's
Authentication-Results (``email.trust``; ``any`` takes the From header alone); the owner's mail in a thread with an
open ``ask`` question answers it; otherwise the mail's files are saved in the chat's area and the mail is stored in
the inbox (taken once by its Message-ID) and queued in its sender's chat.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.email import EmailSettings
from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.email.approval import EmailApprovals
from messaging_llm_bot.channels.email.authres import verdict
from messaging_llm_bot.channels.email.mailitem import MailItem, conversation_of
from messaging_llm_bot.channels.email.message import MailIn, parse
from messaging_llm_bot.channels.email.servers import PolledMail
from messaging_llm_bot.conversation.attachments import SavedFile, save_bytes
from messaging_llm_bot.conversation.images import area_for

log = logging.getLogger(__name__)

#: Strangers logged once per address (no more than this many remembered).
MAX_STRANGERS_LOGGED = 1000


class EmailIntake:
    """Turns fetched mail into stored inbox items; ``take`` returns the item to answer, or None."""

    def __init__(
        self,
        workspace: Workspace,
        inbox: Inbox,
        settings: Callable[[], Settings],
        approvals: EmailApprovals,
        pairing: Callable[[MailIn], Awaitable[None]] | None = None,
    ) -> None:
        self.ws, self.inbox, self._settings, self.approvals = workspace, inbox, settings, approvals
        #: A proven stranger's mail answered with a pairing code (service.py); None: strangers get nothing.
        self.pairing = pairing
        self._strangers: set[str] = set()

    @property
    def settings(self) -> EmailSettings:
        return self._settings().email

    async def take(self, fetched: PolledMail, uidvalidity: int) -> InboxItem | None:
        """Judge one mail and store it; None when it is not to be answered. Raises OSError when the inbox
        cannot store it (the cursor then stays before it: the next look tries again)."""
        if fetched.raw is None:
            log.warning(
                "email: mail UID %d is %d bytes, above email.max_mail_bytes (%d); not read",
                fetched.uid,
                fetched.size,
                self.settings.max_mail_bytes,
            )
            return None
        # The header block alone until the sender is known to be allowed: a stranger's text and files are
        # never decoded, let alone saved.
        mail = await asyncio.to_thread(parse, fetched.raw, body=False)
        settings = self.settings
        allowed = {one.strip().lower() for one in settings.allowed}
        if not mail.sender or mail.sender not in allowed or mail.sender == settings.address.strip().lower():
            if self.pairing is not None and self.proven_stranger(mail):
                await self.pairing(mail)
            else:
                self._stranger(mail)
            return None
        if mail.automated:
            log.info(
                "email: mail %s from %s is automated (%s); not answered", mail.message_id, mail.sender, mail.automated
            )
            return None
        if settings.trust != "any":
            judged = verdict(mail.auth_results, mail.sender, settings.authserv_id)
            if not judged.passed:
                log.warning(
                    "email: mail %s claims to be from %s, but %s; ignored (a forged From is easy, docs/email.md)",
                    mail.message_id,
                    mail.sender,
                    judged.reason,
                )
                return None
        mail = await asyncio.to_thread(parse, fetched.raw)
        conversation = conversation_of(mail)
        owner = mail.sender == settings.owner_address
        if owner and self.approvals.resolve(conversation, mail.text):
            return None  # the answer to an open question, not a new message
        source_id = f"email:{mail.message_id}" if mail.message_id else f"email:uid:{uidvalidity}:{fetched.uid}"
        if await asyncio.to_thread(self.inbox.seen, source_id):
            log.info("email: mail %s was already taken; not answered again", mail.message_id or fetched.uid)
            return None
        files = await asyncio.to_thread(self._save_files, mail, conversation, owner)
        item = await asyncio.to_thread(self.inbox.accept, source_id, conversation, MailItem.of(mail, files).to_json())
        if item is None:
            log.info("email: mail %s was already taken; not answered again", mail.message_id or fetched.uid)
        return item

    def proven_stranger(self, mail: MailIn) -> bool:
        """A stranger who may be given a pairing code: a person's mail (no robot) whose sender your provider's
        Authentication-Results proves, so the code goes to the one who wrote, never to a forged From
        (backscatter). With ``email.trust: any`` nothing proves a sender: no stranger is answered."""
        settings = self.settings
        if not mail.sender or mail.sender == settings.address.strip().lower() or mail.automated:
            return False
        return settings.trust != "any" and verdict(mail.auth_results, mail.sender, settings.authserv_id).passed

    def _stranger(self, mail: MailIn) -> None:
        who = mail.sender or "(no single From address)"
        if who in self._strangers:
            return
        if len(self._strangers) < MAX_STRANGERS_LOGGED:
            self._strangers.add(who)
        log.info(
            "email: mail from %s, who is not in email.allowed: not answered (no reply to strangers); "
            "add the address to email.allowed to talk with them",
            who,
        )

    def _save_files(self, mail: MailIn, conversation: str, owner: bool) -> tuple[SavedFile, ...]:
        """The mail's attachments saved in the chat's area (a guest's never in the owner's inbox/)."""
        if not mail.attachments:
            return ()
        area = area_for(self.ws, conversation, owner)
        today = datetime.now(ZoneInfo(self._settings().runtime.timezone)).date()
        # The mail's words go with the first file, as a chat's caption does (the model reads them there).
        caption = _with_subject(mail.subject, mail.text)
        return tuple(
            save_bytes(
                area,
                one.data,
                one.name,
                today,
                kind="photo" if one.mime.startswith("image/") else "document",
                mime_type=one.mime,
                caption=caption if index == 0 else "",
            )
            for index, one in enumerate(mail.attachments)
        )


def _with_subject(subject: str, text: str) -> str:
    return f"(mail, subject: {subject})\n\n{text}".strip() if subject else text
