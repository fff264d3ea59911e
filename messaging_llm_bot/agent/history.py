"""The model-facing conversation history: ``conversations/<id>/history.json`` in the workspace.

Only user messages and final replies are kept (not intermediate skill rounds), so the history
stays compact and byte-stable for prompt caching. The full log (L0) is the memory module's.

history.json is a derived cache of the conversation for the prompt: it is kept in memory per
conversation (re-read only when the file's mtime, size or inode changes, e.g. the owner
edited it; the ``CACHED_CONVERSATIONS`` used last, so a year of mail threads, topics and sessions does not
keep every history in memory) and replaced atomically without an fsync. Trade-off: after a power loss or kernel
crash (not a process crash) the last pairs may be missing from it, or the file may come back
empty, which reads as an empty history; the L0 log under ``conversations/<id>/`` still holds
every turn. A turn saves ~4 ms of disk flush inside the conversation lock.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime

from assistant_framework.config.settings import RuntimeSettings
from assistant_framework.memory.log import CONVERSATIONS_DIR, safe_conversation_id
from assistant_framework.tokens import estimate_tokens
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.compaction import split_summary
from messaging_llm_bot.agent.settings import history_budget_chars
from messaging_llm_bot.llm.wire import Message

#: Histories kept in memory: those of the conversations used last (a full one is about 30 kB; every conversation
#: ever answered was kept: a mail thread, topic or session each, tens of MB after a year). The others are read
#: from their file when used again.
CACHED_CONVERSATIONS = 64

_Cached = tuple[tuple[int, int, int] | None, list[Message], list[str] | None]


def history_budget(runtime: RuntimeSettings) -> tuple[int, Callable[[Message], int]]:
    """(budget, how a message is measured): estimated tokens when history_budget_tokens is set, else characters."""
    tokens = runtime.history_budget_tokens
    return (tokens, message_tokens) if tokens is not None else (history_budget_chars(runtime), message_chars)


def conversation_dir(conversation_id: str) -> str:
    """Workspace folder of a conversation, the same one the memory module's L0 log uses."""
    return f"{CONVERSATIONS_DIR}/{safe_conversation_id(conversation_id)}"


def message_chars(message: Message) -> int:
    """Size of one message for budgeting (its content plus a small per-message overhead)."""
    return len(str(message.get("content") or "")) + 8


def message_tokens(message: Message) -> int:
    """Size of one message in estimated tokens (non-ASCII counted heavier), for a token budget."""
    return estimate_tokens(str(message.get("content") or "")) + 2


def pair_groups(messages: list[Message]) -> list[list[Message]]:
    """Split history into groups that start at each user message (a user/assistant pair)."""
    groups: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "user" or not groups:
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups


#: When history outgrows its budget it is cut to this share of it, not just under it: the
#: prompt prefix after the system message then stays byte-identical for several turns
#: (provider prompt caches keep working) instead of shifting on every turn once full.
TRIM_LOW_WATER = 0.6


def trim_history(
    messages: list[Message],
    budget_chars: int,
    low_water: float = TRIM_LOW_WATER,
    measure: Callable[[Message], int] = message_chars,
) -> list[Message]:
    """Within budget: unchanged. Over it: drop whole pairs, oldest first, until the history
    fits ``low_water * budget_chars`` (the newest pair is kept if it fits the budget) (pure).
    The budget is in the unit of ``measure`` (characters; ``message_tokens`` for a token budget).
    A summary at the head (agent/compaction.py) is kept and counts against the budget."""
    head, rest = split_summary(messages)
    if head:
        room = max(0, budget_chars - sum(measure(m) for m in head))
        return head + _trim_pairs(rest, room, low_water, measure)
    return _trim_pairs(messages, budget_chars, low_water, measure)


def _trim_pairs(
    messages: list[Message], budget_chars: int, low_water: float, measure: Callable[[Message], int]
) -> list[Message]:
    if sum(measure(m) for m in messages) <= budget_chars:
        return list(messages)
    groups = pair_groups(messages)
    sizes = [sum(measure(m) for m in g) for g in groups]
    total = sum(sizes)
    target = budget_chars * min(1.0, max(0.0, low_water))
    start = 0
    while start < len(groups) and total > target:
        total -= sizes[start]
        start += 1
    if start == len(groups) and groups and sizes[-1] <= budget_chars:
        start = len(groups) - 1
    return [m for g in groups[start:] for m in g]


def outside_in_history(history: list[Message]) -> tuple[bool, bool]:
    """(any message from a turn outside content entered, any such message or one written while
    such a message was in the prompt) for ``history`` (pure). See ``HistoryStore.append_pair``."""
    original = any(m.get("untrusted") is True for m in history)
    return original, original or any(m.get("derived") is True for m in history)


def prompt_messages(history: list[Message]) -> list[Message]:
    """History entries as Chat Completions messages (role and content only)."""
    return [{"role": m["role"], "content": m["content"]} for m in history]


class HistoryStore:
    """Load, append (trimmed) and clear per-conversation history files (thread-safe across
    conversations; the agent's conversation lock orders the calls of one conversation)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        # conversation id -> (file stamp, messages, their JSON lines or None): the file is read
        # again only when it changed, and each message is encoded once, not on every append.
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._cache_lock = threading.Lock()
        # One read-modify-write at a time: a turn's append and a background summary's write.
        self._write_lock = threading.RLock()

    def _file(self, conversation_id: str) -> str:
        return f"{conversation_dir(conversation_id)}/history.json"

    def load(self, conversation_id: str) -> list[Message]:
        """The stored history (oldest first), the caller's to change; an unreadable file counts as empty."""
        return [dict(m) for m in self.view(conversation_id)]

    def view(self, conversation_id: str) -> list[Message]:
        """``load`` without copying each message: the cached messages themselves, which the caller only reads (a
        turn's prompt: copying hundreds of them before every model call cost more than reading them)."""
        target = self.workspace.path(self._file(conversation_id))
        stamp = _stamp(target)
        cached = self._cached(conversation_id)
        if stamp is None:
            self._forget(conversation_id)
            return []
        if cached is not None and cached[0] == stamp:
            return list(cached[1])
        messages = self._read(conversation_id)
        self._keep(conversation_id, (stamp, messages, None))
        return list(messages)

    def _cached(self, conversation_id: str) -> _Cached | None:
        with self._cache_lock:
            cached = self._cache.get(conversation_id)
            if cached is not None:
                self._cache.move_to_end(conversation_id)
            return cached

    def _keep(self, conversation_id: str, entry: _Cached) -> None:
        with self._cache_lock:
            self._cache[conversation_id] = entry
            self._cache.move_to_end(conversation_id)
            while len(self._cache) > CACHED_CONVERSATIONS:
                self._cache.popitem(last=False)  # the one used longest ago

    def _read(self, conversation_id: str) -> list[Message]:
        try:
            data = self.workspace.read_json(self._file(conversation_id), default=[])
        except (ValueError, UnicodeDecodeError):
            return []
        if not isinstance(data, list):
            return []
        return [
            m
            for m in data
            if isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)
        ]

    def append_pair(
        self,
        conversation_id: str,
        user_text: str,
        reply: str,
        *,
        budget_chars: int,
        when: datetime | None = None,
        untrusted: bool = False,
        derived: bool = False,
        outside: list[dict[str, str]] | None = None,
        measure: Callable[[Message], int] = message_chars,
        on_drop: Callable[[list[Message]], None] | None = None,
    ) -> list[Message]:
        """Add one user/assistant pair and store the history trimmed to the budget; returns it.

        ``untrusted``: outside content entered that turn (``"untrusted": true`` on both messages).
        ``derived``: the turn ran with such a message in its prompt, so its reply may restate the
        outside text (``"derived": true`` on the reply). Only one generation: a turn that saw
        derived messages alone writes plain ones, so the guard ends once both have left the window.
        ``outside``: the keys and labels of the outside content the turn had in view (agent/outside.py),
        kept on each marked message (an allowance of the owner's names them).
        ``on_drop`` gets the messages the budget dropped (for a summary of them, agent/compaction.py).
        """
        stamp = when.isoformat(timespec="seconds") if when else None
        new: list[Message] = [{"role": "user", "content": user_text}, {"role": "assistant", "content": reply}]
        for message in new:
            if stamp:
                message["time"] = stamp
            if untrusted:
                message["untrusted"] = True
        if derived and not untrusted:
            new[1]["derived"] = True
        for message in new:
            if outside and (message.get("untrusted") or message.get("derived")):
                message["outside"] = list(outside)
        with self._write_lock:
            old = self.load(conversation_id)
            combined = old + new
            history = trim_history(combined, budget_chars, measure=measure)
            head = split_summary(combined)[0]
            kept = len(history) - len(head)  # the newest messages after the summary
            dropped = combined[len(head) : len(combined) - kept]
            cached = self._cached(conversation_id)
            old_lines = (
                cached[2] if cached is not None and cached[2] is not None and len(cached[2]) == len(old) else None
            )
            if old_lines is None:
                old_lines = [json.dumps(m, ensure_ascii=False) for m in old]
            all_lines = old_lines + [json.dumps(m, ensure_ascii=False) for m in new]
            self._store(conversation_id, history, all_lines[: len(head)] + all_lines[len(all_lines) - kept :])
        if dropped and on_drop is not None:
            on_drop(dropped)
        return history

    def _store(self, conversation_id: str, history: list[Message], lines: list[str]) -> None:
        """Write the history (one message per line: readable, and encoded by the fast C encoder)."""
        body = ",\n".join(lines)
        # No fsync: a derived cache of the L0 log (see the module docstring for the trade-off).
        target = self.workspace.write_text(
            self._file(conversation_id), f"[\n{body}\n]\n" if history else "[]\n", durable=False
        )
        self._keep(conversation_id, (_stamp(target), [dict(m) for m in history], lines))

    def summary_head(self, conversation_id: str) -> list[Message]:
        """The summary messages at the head of the history ([] for none)."""
        return split_summary(self.load(conversation_id))[0]

    def set_summary(self, conversation_id: str, pair: list[Message]) -> bool:
        """Put ``pair`` at the head of the history in place of its summary; False (nothing written) when the
        history is empty (cleared by /reset meanwhile)."""
        with self._write_lock:
            rest = split_summary(self.load(conversation_id))[1]
            if not rest:
                return False
            history = [*pair, *rest]
            self._store(conversation_id, history, [json.dumps(m, ensure_ascii=False) for m in history])
        return True

    def clear(self, conversation_id: str) -> int:
        """Delete the history; returns how many messages it had."""
        with self._write_lock:
            count = len(self.load(conversation_id))
            self.workspace.delete(self._file(conversation_id))
            self._forget(conversation_id)
        return count

    def _forget(self, conversation_id: str) -> None:
        with self._cache_lock:
            self._cache.pop(conversation_id, None)


def _stamp(path: os.PathLike[str]) -> tuple[int, int, int] | None:
    """What identifies a version of the file: mtime, size and inode (an atomic replace makes
    a new inode); None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
