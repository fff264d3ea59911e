"""Pairing codes: a stranger gets a one-time code, the owner approves it, the stranger is let in.

A stranger who writes to the bot in a private chat on any channel gets, at most once an hour, a short code
(``K7M-4QX``) and the sentence "ask the owner to approve code K7M-4QX". The owner approves it with
``/pair K7M-4QX`` (``/pair K7M-4QX owner|guest``) in their own chat, or ``.venv/bin/assistant pair approve``;
the approval adds the stranger's id to that channel's allowlist in the config's git-ignored local layer
(``config/local/``, where ``config set`` writes: ``assistant_framework.settings.write_setting``) and the running
bot applies it without a restart (``Runtime.reload``; an approval made by the CLI is applied at the stranger's
next message).

Codes are kept in ``state/pairing.json`` only as salted SHA-256 hashes, expire after
``runtime.pairing_code_minutes``, are used once, and are bounded: one per sender an hour, ``GLOBAL_PER_HOUR`` in
all, ``MAX_PENDING`` waiting. ``runtime.pairing: false`` keeps the old answer (the stranger is told their id).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from assistant_framework.config import load_config_detailed
from assistant_framework.settings import write_setting
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.routes import allowlist_of

if TYPE_CHECKING:  # pragma: no cover
    from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)

PAIRING_FILE = "state/pairing.json"
#: No 0/O, 1/I/L: a code read aloud or retyped from a phone is typed right.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_CHARS = 6
#: A sender gets at most one code in this time (the stranger's further messages get no answer).
PER_SENDER_SECONDS = 3600
#: At most this many codes are given out an hour in all (a flood of new senders gets silence beyond it).
GLOBAL_PER_HOUR = 20
#: At most this many codes wait for approval at once.
MAX_PENDING = 50
#: An id longer than this is no channel's user id: not given a code.
MAX_SENDER_CHARS = 100
ROLES = ("guest", "owner")


def stranger_text(code: str, minutes: int) -> str:
    """What a stranger is told with their code."""
    return (
        f"I don't know you yet. Ask the owner to approve code {code} (valid for {minutes} minutes); "
        "then write to me again."
    )


WELCOME_TEXT = "The owner let you in: please send your message again."


def normalized(code: str) -> str:
    """A code as typed (``k7m 4qx``, ``K7M-4QX``) in its one stored form (``K7M4QX``)."""
    return "".join(ch for ch in code.upper() if ch.isalnum())[: CODE_CHARS * 2]


def shown(raw: str) -> str:
    """``K7M4QX`` as the stranger sees it: ``K7M-4QX``."""
    return f"{raw[:3]}-{raw[3:]}"


def _when(stamp: str) -> datetime:
    """An ISO time of the file; one without a zone (hand-edited) is read as UTC, one unreadable as long past."""
    try:
        moment = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return datetime.min.replace(tzinfo=UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _digest(salt: str, raw: str) -> str:
    return hashlib.sha256(f"{salt}:{raw}".encode()).hexdigest()


@dataclass
class PendingCode:
    """One code given out and not yet used: who got it, where, and until when it can be approved."""

    channel: str
    sender: str
    salt: str
    digest: str
    created: str  # ISO time, UTC
    expires: str

    def matches(self, raw: str) -> bool:
        return hmac.compare_digest(self.digest, _digest(self.salt, raw))


@dataclass
class PairingState:
    """``state/pairing.json``: the codes waiting, when each sender and the bot gave codes out, and the
    approvals made outside the running bot that it has yet to apply."""

    pending: list[PendingCode] = field(default_factory=list)
    issued: dict[str, str] = field(default_factory=dict)  # "channel:sender" -> ISO time of their last code
    approved: list[str] = field(default_factory=list)  # "channel:sender" approved by the CLI, to apply


class PairingStore:
    """The pairing state in the workspace, changed under its file lock (the bot and the CLI share it)."""

    def __init__(self, workspace: Workspace, clock: Callable[[], datetime] | None = None) -> None:
        self.workspace = workspace
        self._clock = clock or (lambda: datetime.now(UTC))

    def now(self) -> datetime:
        return self._clock()

    def _read(self) -> PairingState:
        try:
            data = self.workspace.read_json(PAIRING_FILE, default={})
            return PairingState(
                pending=[PendingCode(**row) for row in data.get("pending", [])][:MAX_PENDING],
                issued={str(k): str(v) for k, v in dict(data.get("issued", {})).items()},
                approved=[str(x) for x in data.get("approved", [])][:MAX_PENDING],
            )
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as err:
            # A damaged file loses the waiting codes (the strangers ask again), never lets anyone in.
            log.warning("%s is damaged (%s); pairing starts again from no codes", PAIRING_FILE, err)
            return PairingState()

    def _write(self, state: PairingState) -> None:
        self.workspace.write_json(PAIRING_FILE, asdict(state))

    def _fresh(self, state: PairingState, now: datetime) -> PairingState:
        """Expired codes and issue times older than an hour dropped."""
        hour_ago = now - timedelta(seconds=PER_SENDER_SECONDS)
        state.pending = [p for p in state.pending if _when(p.expires) > now]
        state.issued = {k: v for k, v in state.issued.items() if _when(v) > hour_ago}
        return state

    def issue(self, channel: str, sender: str, minutes: int) -> str | None:
        """A new code for ``sender`` (shown form), or None when they had one this hour or the bounds are reached."""
        if not sender or len(sender) > MAX_SENDER_CHARS:
            return None
        with self.workspace.lock(PAIRING_FILE):
            now = self.now()
            state = self._fresh(self._read(), now)
            who = f"{channel}:{sender}"
            if who in state.issued:
                return None
            if len(state.issued) >= GLOBAL_PER_HOUR or len(state.pending) >= MAX_PENDING:
                log.warning("pairing: no code for %s: %d codes were given out this hour", who, len(state.issued))
                return None
            raw = "".join(secrets.choice(ALPHABET) for _ in range(CODE_CHARS))
            salt = secrets.token_hex(8)
            state.pending = [p for p in state.pending if (p.channel, p.sender) != (channel, sender)]
            state.pending.append(
                PendingCode(
                    channel,
                    sender,
                    salt,
                    _digest(salt, raw),
                    now.isoformat(timespec="seconds"),
                    (now + timedelta(minutes=minutes)).isoformat(timespec="seconds"),
                )
            )
            state.issued[who] = now.isoformat(timespec="seconds")
            self._write(state)
        log.info("pairing: gave %s a code (expires in %d min)", who, minutes)
        return shown(raw)

    def take(self, code: str) -> PendingCode | None:
        """The waiting code typed, removed (used once); None when no unexpired code matches."""
        raw = normalized(code)
        if len(raw) != CODE_CHARS:
            return None
        with self.workspace.lock(PAIRING_FILE):
            state = self._fresh(self._read(), self.now())
            found = next((p for p in state.pending if p.matches(raw)), None)
            if found is not None:
                state.pending.remove(found)
                self._write(state)
        return found

    def put_back(self, entry: PendingCode) -> None:
        """A taken code whose approval failed waits again (until it expires)."""
        with self.workspace.lock(PAIRING_FILE):
            state = self._read()
            state.pending.append(entry)
            self._write(state)

    def pending(self) -> list[PendingCode]:
        """The codes waiting for approval, oldest first."""
        with self.workspace.lock(PAIRING_FILE):
            return self._fresh(self._read(), self.now()).pending

    def revoke(self, what: str) -> int:
        """Remove the waiting codes matching ``what`` (a code, or a sender's id); how many were removed."""
        raw = normalized(what)
        with self.workspace.lock(PAIRING_FILE):
            state = self._read()
            keep = [p for p in state.pending if not (p.sender == what.strip() or (raw and p.matches(raw)))]
            removed = len(state.pending) - len(keep)
            if removed:
                state.pending = keep
                self._write(state)
        return removed

    def note_approved(self, channel: str, sender: str) -> None:
        """An approval made outside the running bot: it reloads its config at the sender's next message."""
        with self.workspace.lock(PAIRING_FILE):
            state = self._read()
            state.approved = [*state.approved, f"{channel}:{sender}"][-MAX_PENDING:]
            self._write(state)

    def take_approved(self, channel: str, sender: str) -> bool:
        """True (once) when ``sender`` was approved outside the running bot and it has not applied that yet."""
        who = f"{channel}:{sender}"
        if not self.workspace.exists(PAIRING_FILE):
            return False
        with self.workspace.lock(PAIRING_FILE):
            state = self._read()
            if who not in state.approved:
                return False
            state.approved = [x for x in state.approved if x != who]
            self._write(state)
        return True


# -- the allowlist change -----------------------------------------------------------------------------


class PairingRefused(Exception):
    """An approval that cannot be made as asked (the message says why, in one sentence)."""


def allow(config_root: Path, channel: str, sender: str, role: str) -> Path:
    """Add ``sender`` to ``channel``'s allowlist (``role`` owner: also its owner) in the config's local layer;
    the file written. Raises PairingRefused when the role cannot be given, ConfigError when it cannot be written."""
    allowlist = allowlist_of(channel)  # the channel's Route says where (conversation/routes.py)
    if allowlist is None:
        raise PairingRefused(f"pairing does not know the channel {channel!r}")
    list_key, owner_key = allowlist.list_key, allowlist.owner_key
    section = dict(load_config_detailed(config_root, validate=False, env=False).data.get(channel) or {})
    allowed = list(section.get(list_key) or [])
    value = allowlist.written(sender)
    owner = section.get(owner_key) or (allowed[0] if allowed else None)
    if role == "owner" and owner is not None and str(owner) not in (sender, str(value)):
        raise PairingRefused(
            f"{channel} already has an owner ({owner}); approve this code as guest, or change {channel}.{owner_key} "
            "with config set"
        )
    if role == "guest" and owner is None:
        # The first allowed id is the owner when none is named: a guest let in first would become the owner.
        raise PairingRefused(f"{channel} has no owner yet; approve this code as owner if it is you")
    written = config_root
    if value not in allowed:
        written = write_setting(config_root, f"{channel}.{list_key}", [*allowed, value])
    if role == "owner" and section.get(owner_key) is None:
        written = write_setting(config_root, f"{channel}.{owner_key}", value)
    return written


# -- what the channels and the commands call ----------------------------------------------------------


class Pairing:
    """The conversation service's pairing: a stranger's answer and the owner's /pair, for every channel."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = PairingStore(runtime.workspace)

    def stranger(self, channel: str, sender: str) -> str | None:
        """What a stranger in a private chat is told: None when pairing is off (the channel's own refusal
        follows), "" for nothing (a code was given this hour), else the code's sentence, or the welcome when
        the CLI approved them meanwhile (the config is reloaded first). Blocking: call it off the event loop."""
        settings = self.runtime.settings.runtime
        if not settings.pairing:
            return None
        if self.store.take_approved(channel, sender):
            report = self.runtime.reload()
            if report.error is None:
                return WELCOME_TEXT
            log.warning("pairing: could not apply the approval of %s:%s: %s", channel, sender, report.error)
            return ""
        code = self.store.issue(channel, sender, settings.pairing_code_minutes)
        return stranger_text(code, settings.pairing_code_minutes) if code else ""


def approve(store: PairingStore, config_root: Path, code: str, role: str = "guest") -> tuple[PendingCode | None, str]:
    """Use ``code``: (the entry, one sentence). A wrong, used or expired code changes nothing."""
    if role not in ROLES:
        return None, f"Unknown role {role[:20]!r}: use guest or owner."
    entry = store.take(code)
    if entry is None:
        return None, "No waiting code matches that: it is wrong, used or expired. Nothing changed."
    try:
        written = allow(config_root, entry.channel, entry.sender, role)
    except PairingRefused as err:
        store.put_back(entry)
        return None, f"{err}."
    except Exception as err:  # noqa: BLE001 - a config write that failed: said in one sentence, the code kept
        store.put_back(entry)
        log.warning("pairing: could not write the allowlist: %s", err)
        return None, f"I could not change the allowlist ({str(err).splitlines()[0]}); the code still waits."
    log.info("pairing: %s:%s approved as %s (%s)", entry.channel, entry.sender, role, written)
    return entry, f"Approved: {entry.channel} user {entry.sender} can write to me now, as {role}."


def pair_command(runtime: Runtime, args: str) -> str:
    """``/pair`` (the waiting codes) or ``/pair CODE [owner|guest]`` in the owner's chat."""
    store = PairingStore(runtime.workspace)
    words = args.split()
    if not words:
        return pending_text(store.pending())
    role = words.pop().lower() if len(words) > 1 and words[-1].lower() in ROLES else "guest"
    if len(words) > 2:
        return "Usage: /pair CODE, or /pair CODE owner|guest."
    try:
        root = config_root(runtime)
    except PairingRefused as err:
        return f"{err}."
    entry, text = approve(store, root, "".join(words), role)  # "k7m 4qx" as typed on a phone
    if entry is None:
        return text
    report = runtime.reload()
    if report.error is not None:
        return f"{text} But the running config could not be reloaded: {report.error}"
    return text


def config_root(runtime: Runtime) -> Path:
    """The config the runtime was started with (a directory or one file)."""
    path = getattr(runtime, "config_path", None)
    if path is None:
        raise PairingRefused("this bot was started without a config path")
    return Path(path)


def pending_text(pending: list[PendingCode]) -> str:
    """/pair alone: the codes waiting (not the codes themselves: only their hashes are kept)."""
    if not pending:
        return "No pairing code is waiting. A stranger who writes to me gets one to give you."
    lines = ["Pairing codes waiting (approve one with /pair CODE):"]
    lines += [f"- {p.channel} user {p.sender}, until {p.expires[:16].replace('T', ' ')} UTC" for p in pending]
    return "\n".join(lines)


def pending_json(pending: list[PendingCode]) -> str:
    """``pair list --json``: the waiting codes without their hashes."""
    rows = [{"channel": p.channel, "sender": p.sender, "created": p.created, "expires": p.expires} for p in pending]
    return json.dumps(rows, indent=2)
