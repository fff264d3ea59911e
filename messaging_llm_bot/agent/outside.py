"""The outside content in front of the model in one turn: where each piece came from, the sentence the
owner reads when a call asks because of it, and the owner's "allow for this conversation".

A piece is named by a stable key, so an allowance covers the same content when it comes back (a recalled
hit recalled again, a reply written beside it still in the history) and never new content:

- ``message:<trace>``: the message itself (a forward, an attachment's text);
- ``skill:<trace>:<n>``: the result or the error of the turn's n-th call;
- ``recall:<path>#<ref>``: a memory hit shown in the recall block (its file and place in it);
- the keys a history message carries (``HistoryStore.append_pair``), or ``history:<time>`` for one
  written before keys were kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from assistant_framework.json_types import JsonObject
from assistant_framework.policy import UNTRUSTED_WHY

#: Where a piece came from: this turn's message or calls, memory recalled for this message, the history.
TURN, RECALL, HISTORY = "turn", "recall", "history"
#: Labels named in one question (the rest counted), and the characters of one label.
SHOWN_LABELS = 3
LABEL_CHARS = 80
#: Conversations whose allowances are kept (the oldest forgotten first).
MAX_CONVERSATIONS = 1000


@dataclass(frozen=True)
class OutsideSource:
    """One piece of outside content in the turn's context."""

    key: str
    label: str  # what the owner reads: "the result of web", "memory recalled for this message (collector:rss, …)"
    where: str  # TURN, RECALL or HISTORY


def _labels(sources: list[OutsideSource]) -> str:
    names = list(dict.fromkeys(source.label[:LABEL_CHARS] for source in sources))
    more = len(names) - SHOWN_LABELS
    return "; ".join(names[:SHOWN_LABELS]) + (f"; and {more} more" if more > 0 else "")


def why_text(sources: Iterable[OutsideSource]) -> str:
    """Why a call asks because of outside content, saying which content and from where: this turn's
    (the message, a call's result), memory recalled for this message (in this turn only), or the
    history (which ``/reset`` clears)."""
    found = list(sources)
    parts = []
    turn = [s for s in found if s.where == TURN]
    recall = [s for s in found if s.where == RECALL]
    history = [s for s in found if s.where == HISTORY]
    if turn:
        parts.append(f"{UNTRUSTED_WHY} ({_labels(turn)})")
    if recall:
        lead = "and" if parts else UNTRUSTED_WHY + ":"
        parts.append(
            f"{lead} memory recalled for this message holds outside content ({_labels(recall)}), in this turn only"
        )
    if history:
        lead = "and" if parts else ""
        text = f"outside content from earlier in this chat is still in view: {_labels(history)} (/reset clears it)"
        parts.append(f"{lead} {text}".strip())
    return " ".join(parts) or UNTRUSTED_WHY


def stored_sources(sources: Iterable[OutsideSource]) -> list[dict[str, str]]:
    """The keys and labels a history message keeps of the sources its turn had in view (a recalled one
    says so: in a later turn it is the history's)."""
    return [
        {"key": s.key, "label": (f"recalled from memory: {s.label}" if s.where == RECALL else s.label)[:LABEL_CHARS]}
        for s in sources
    ]


def history_sources(history: list[JsonObject]) -> list[OutsideSource]:
    """The outside content the history holds: each marked message's kept sources (as history now), or
    one source for a marked message that kept none."""
    found: dict[str, OutsideSource] = {}
    for message in history:
        if message.get("untrusted") is not True and message.get("derived") is not True:
            continue
        kept = message.get("outside")
        entries = [e for e in kept if isinstance(e, dict)] if isinstance(kept, list) else []
        for entry in entries:
            key, label = str(entry.get("key") or ""), str(entry.get("label") or "")
            if key:
                found.setdefault(key, OutsideSource(key, label or "an earlier message", HISTORY))
        if not entries:
            key = f"history:{message.get('time') or ''}:{message.get('role')}"
            what = (
                "a reply written beside outside content" if message.get("derived") else "a message with outside content"
            )
            found.setdefault(
                key, OutsideSource(key, what + (f" ({message['time']})" if message.get("time") else ""), HISTORY)
            )
    return list(found.values())


class Allowances:
    """The owner's "allow for this conversation": per conversation and skill, the outside content the
    owner saw when allowing. A later call of that skill there runs unasked while the outside content in
    view is all of that content; new outside content asks again. Kept in memory (a restart forgets
    them); ``forget`` drops a conversation's (``/reset``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._granted: OrderedDict[str, dict[str, frozenset[str]]] = OrderedDict()

    def grant(self, conversation: str, skill: str, keys: Iterable[str]) -> None:
        with self._lock:
            skills = self._granted.pop(conversation, {})
            skills[skill] = skills.get(skill, frozenset()) | frozenset(keys)
            self._granted[conversation] = skills
            while len(self._granted) > MAX_CONVERSATIONS:
                self._granted.popitem(last=False)

    def covers(self, conversation: str, skill: str, keys: Iterable[str]) -> bool:
        wanted = frozenset(keys)
        with self._lock:
            allowed = self._granted.get(conversation, {}).get(skill)
        return allowed is not None and bool(wanted) and wanted <= allowed

    def forget(self, conversation: str) -> None:
        with self._lock:
            self._granted.pop(conversation, None)
