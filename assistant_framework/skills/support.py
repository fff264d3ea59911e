"""Small helpers the built-in skills share: the context's clock and timezone, argument checks,
and the label that marks outside content in a result."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.stores.provenance import is_untrusted

if TYPE_CHECKING:
    from assistant_framework.skills.spec import SkillContext

#: Put before each piece of a result whose text came from outside (a mail, a feed item, a forwarded
#: message, a web page): the bot then treats the turn as untrusted, as after any outside read. A JSON
#: record with ``"untrusted": true`` in a result counts the same (the facts skill shows marked facts so).
OUTSIDE_LABEL = "[outside content]"
#: Said after a write in an untrusted turn: what was stored carries the mark.
MARKED = "marked as outside content"


class OwnWordsError(ValueError):
    """A skill's error whose sentence holds only the skill's own words: no text from a server, a page,
    a file or a mail (a rate limit reached, an empty query, "restarting: try again").

    The error of a skill whose results are outside content is outside content too (a server's error
    detail, a redirect's target URL): it marks the turn as a result would. Raise this instead of
    ``ValueError`` only when nothing outside went into the sentence, so the turn stays as it was."""


def context_untrusted(context: SkillContext | None) -> bool:
    """True when outside content entered the turn (``context.untrusted``): what a skill stores now may
    be that content's words and should carry the mark (``"untrusted": true`` in a JSON record, the
    front matter ``untrusted: true`` in a text file; ``assistant_framework.stores.provenance``)."""
    return context is not None and context.untrusted


def outside_label(record: Any) -> str:
    """``OUTSIDE_LABEL`` and a space for a record marked ``"untrusted": true``, else ""; put it before
    the record's text when a message repeats it."""
    return f"{OUTSIDE_LABEL} " if is_untrusted(record) else ""


def context_zone(context: SkillContext | None) -> ZoneInfo:
    """The context's IANA timezone (UTC without a context); ValueError names a bad zone."""
    name = (context.timezone if context is not None else "") or "UTC"
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"timezone {name!r} (runtime.timezone) is not a known IANA zone") from None


def context_now(context: SkillContext | None) -> datetime:
    """Now in the context's timezone; a ``services["clock"]`` callable replaces the real clock."""
    zone = context_zone(context)
    clock = context.services.get("clock") if context is not None else None
    moment = clock() if clock is not None else datetime.now(zone)
    if moment.tzinfo is None:
        raise ValueError(f"services['clock'] returned a naive datetime {moment!r}")
    return moment.astimezone(zone)


def need(args: Mapping[str, Any], action: str, *keys: str) -> None:
    """Raise ValueError naming the missing fields an action requires."""
    missing = [key for key in keys if args.get(key) in (None, "", [])]
    if missing:
        raise ValueError(f"action {action!r} needs {', '.join(missing)}")
