"""Who sent a Signal message: the account (ACI UUID) is the identity, a phone number only a claim (numbers change
hands), so an allowed number is pinned to the account of its first message that carries one. The rules and how to
accept a new account for a number: docs/signal.md, "Identity".
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from assistant_framework.access import sees_owner_data
from assistant_framework.config.settings import SignalSettings
from assistant_framework.config.settings.chat import signal_id
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.signal.settings import SignalMessage

log = logging.getLogger(__name__)

IDENTITIES = "state/signal/identities.json"


@dataclass(frozen=True)
class SenderVerdict:
    """The verdict on one message's sender: the ids the bot trusts, and what they may do."""

    ids: frozenset[str]
    allowed: bool
    owner: bool
    #: What the record says when the message's number and account disagree with it (the message is refused).
    mismatch: str | None = None

    def owner_chat(self, msg: SignalMessage) -> bool:
        """True only for the owner in their own direct chat (assistant_framework.access)."""
        return sees_owner_data(self.owner, msg.group_id is None)


class Identities:
    """The number -> account UUID pins of one workspace; thread-safe."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self._lock = threading.Lock()
        pins = workspace.read_state(IDENTITIES, log, "signal: numbers are pinned to accounts anew")
        self._pins = {str(number): signal_id(str(uuid)) for number, uuid in pins.items() if number and uuid}
        self._warned: set[tuple[str, str]] = set()

    def pinned(self, number: str) -> str | None:
        """The account UUID on record for ``number``, or None."""
        with self._lock:
            return self._pins.get(number)

    def judge(self, msg: SignalMessage, settings: SignalSettings) -> SenderVerdict:
        """The sender of ``msg``. A number counts only with the account pinned to it (or when neither the
        number nor the account is pinned to another); a message whose number and account disagree with
        the record is refused whatever the allowlist says (its chat would be the number's)."""
        number, uuid = msg.number, msg.uuid
        ids: set[str] = {uuid} if uuid else set()
        mismatch = None
        with self._lock:
            if uuid:
                ids.update(n for n, u in self._pins.items() if u == uuid)  # the account's number, also when hidden
            if number:
                pinned = self._pins.get(number)
                if pinned is not None and pinned != uuid:
                    mismatch = f"{number} is account {pinned}"
                elif pinned is None and ids - {uuid}:  # the account is on record with another number
                    mismatch = f"account {uuid} is {', '.join(sorted(ids - {uuid}))}"
                else:
                    ids.add(number)
        if mismatch is not None:
            self._warn(number or "?", uuid, mismatch)
            return SenderVerdict(ids=frozenset(), allowed=False, owner=False, mismatch=mismatch)
        allowed = any(settings.allows(one) for one in ids)  # deny by default: one of them is in signal.allowed
        owner = allowed and settings.owner_id in ids  # the owner, who must be allowed too
        return SenderVerdict(ids=frozenset(ids), allowed=allowed, owner=owner)

    def pin(self, msg: SignalMessage, sender: SenderVerdict) -> None:
        """Record the account of an allowed number's first message that carries one (blocking: writes a file)."""
        number, uuid = msg.number, msg.uuid
        if not (number and uuid and sender.allowed and number in sender.ids):
            return
        with self._lock:
            if number in self._pins:
                return
            self._pins[number] = uuid  # kept for this run even when the file cannot be written
            try:
                self.ws.write_json(IDENTITIES, dict(sorted(self._pins.items())))
            except OSError as err:
                log.warning("signal: could not record that %s is account %s in %s: %s", number, uuid, IDENTITIES, err)
                return
        log.info("signal: %s is Signal account %s; pinned in %s", number, uuid, IDENTITIES)

    def _warn(self, number: str, uuid: str | None, record: str) -> None:
        key = (number, uuid or "")
        level = logging.INFO if key in self._warned else logging.WARNING
        self._warned.add(key)
        log.log(
            level,
            "signal: refused a message that names %s but comes from account %s; on record %s (%s). If the "
            "number now belongs to another account of yours, delete its entry there.",
            number,
            uuid or "(none)",
            record,
            IDENTITIES,
        )
