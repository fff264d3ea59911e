"""The ``matrix`` section's credential as the channel logs in with it, and its conversation ids (the rest of
the section the channel reads from its record, ``MatrixSettings``).

Pure functions only: no network, no files (the credentials' environment variables are read here, once per
load or ``/reload``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from assistant_framework.config.settings import MatrixSettings

PREFIX = "mx:"
#: Between a room and a thread's root event in a conversation id: in neither a room id nor an event id.
THREAD_MARK = "|"


class MatrixConfigError(Exception):
    """The ``matrix`` section cannot log in as written (a missing credential); the message names the key."""


@dataclass(frozen=True)
class MatrixLogin:
    """The credential the ``matrix`` record names: its values, or its environment variables' (read once per
    load or ``/reload``), and why it cannot log in (a variable unset), else ``""``."""

    password: str = field(repr=False)
    access_token: str = field(repr=False)
    problem: str = ""

    @classmethod
    def of(cls, mx: MatrixSettings, environ: Mapping[str, str] = os.environ) -> MatrixLogin:
        access_token = environ.get(mx.access_token_env, "") if mx.access_token_env else mx.access_token
        password = environ.get(mx.password_env, "") if mx.password_env else mx.password
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
        return cls(password=password, access_token=access_token, problem=problem)


def conversation_of(room_id: str, thread: str | None = None) -> str:
    """A room's conversation (``mx:!abc:example.org``), or a thread's in it (``...|$root``)."""
    return f"{PREFIX}{room_id}{THREAD_MARK}{thread}" if thread else f"{PREFIX}{room_id}"


def address_of(conversation_id: str) -> tuple[str, str | None]:
    """(room id, thread root or None) of a conversation id made by ``conversation_of``."""
    rest = conversation_id.removeprefix(PREFIX)
    room, mark, thread = rest.partition(THREAD_MARK)
    return room, (thread if mark else None)
