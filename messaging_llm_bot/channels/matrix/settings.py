"""The ``matrix`` config section as the channel uses it, and its conversation ids.

Pure functions only: no network, no files (the credentials' environment variables are read here, once per
load or ``/reload``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from assistant_framework.config.settings import Settings

PREFIX = "mx:"
#: Between a room and a thread's root event in a conversation id: in neither a room id nor an event id.
THREAD_MARK = "|"


class MatrixConfigError(Exception):
    """The ``matrix`` section cannot log in as written (a missing credential); the message names the key."""


@dataclass(frozen=True)
class MatrixConfig:
    """What the channel uses of the ``matrix`` record (and runtime.timezone), defaults applied."""

    homeserver: str
    user_id: str
    password: str = field(repr=False)
    access_token: str = field(repr=False)
    device_name: str
    allowed: tuple[str, ...]
    owner: str | None  # whose direct room sees the owner's data; default: first allowed
    group_mode: str
    typing: bool
    morning_digest: str | None
    timezone: str
    edit_interval: float  # seconds between two edits of a growing answer
    problem: str = ""  # why it cannot log in (a credential's variable unset), else ""

    @classmethod
    def from_settings(cls, settings: Settings) -> MatrixConfig:
        mx = settings.matrix
        access_token = os.environ.get(mx.access_token_env, "") if mx.access_token_env else mx.access_token
        password = os.environ.get(mx.password_env, "") if mx.password_env else mx.password
        problem = ""
        if not access_token and not password:
            unset = [
                f"{key} names {name}, which is not set"
                for key, name in (
                    ("matrix.access_token_env", mx.access_token_env),
                    ("matrix.password_env", mx.password_env),
                )
                if name
            ]
            problem = "; ".join(unset) or "matrix: no password_env, password, access_token_env or access_token"
        allowed = tuple(mx.allowed)
        return cls(
            homeserver=mx.homeserver.rstrip("/"),
            user_id=mx.user_id,
            password=password,
            access_token=access_token,
            device_name=mx.device_name,
            allowed=allowed,
            owner=mx.owner or (allowed[0] if allowed else None),
            group_mode=mx.group_mode,
            typing=mx.typing,
            morning_digest=mx.morning_digest or None,
            timezone=settings.runtime.timezone,
            edit_interval=mx.edit_interval_seconds,
            problem=problem,
        )

    def allows(self, user_id: str) -> bool:
        """Deny by default: only the ids in ``matrix.allowed`` (the homeserver proves the sender)."""
        return user_id in self.allowed

    def is_owner(self, user_id: str) -> bool:
        return self.owner is not None and user_id == self.owner and self.allows(user_id)


def conversation_of(room_id: str, thread: str | None = None) -> str:
    """A room's conversation (``mx:!abc:example.org``), or a thread's in it (``...|$root``)."""
    return f"{PREFIX}{room_id}{THREAD_MARK}{thread}" if thread else f"{PREFIX}{room_id}"


def address_of(conversation_id: str) -> tuple[str, str | None]:
    """(room id, thread root or None) of a conversation id made by ``conversation_of``."""
    rest = conversation_id.removeprefix(PREFIX)
    room, mark, thread = rest.partition(THREAD_MARK)
    return room, (thread if mark else None)
