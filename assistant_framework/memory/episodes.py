"""L2: one short model-written summary per conversation and day, written once the day has settled.

``memory/episodes/<conversation>/<YYYY-MM-DD>.md``. A day is settled when its log has had no
new turn for ``memory.episodes.settle_minutes`` (default 60). An episode is rewritten only
when its log changed after it was written (so an episode the user edited later stays). An
episode the owner deleted stays deleted until that day's log changes again (``WRITTEN_STATE``
remembers which log state each episode was written from).

A day with any turn logged ``untrusted`` (outside content: a forward, an attachment, a mail
read by a skill) gives an episode that starts with the front matter ``untrusted: true``: the
index keeps it as outside content and the profile leaves it out. Removing it marks the
episode as the owner's. The episode of a day of a guest's chat (``guests_day``) is recalled in that chat
only and never feeds the owner's profile either.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from ..config.settings import EpisodesSettings
from ..stores.provenance import UNTRUSTED_FRONT_MATTER, is_untrusted
from ..workspace import Workspace
from .log import CONVERSATIONS_DIR
from .modelcall import Complete, call_model

log = logging.getLogger(__name__)
EPISODES_DIR = "memory/episodes"
MAX_INPUT_CHARS = 12000
#: An answer longer than this (a model stuck in a loop) is cut to whole lines.
MAX_EPISODE_CHARS = 4000
#: "<conversation>/<day>" -> the log's mtime when its episode was written.
WRITTEN_STATE = "state/memory_episodes.json"

EPISODE_PROMPT = (
    "Summarise this day of a chat between the user and their assistant in 3-8 short bullet "
    "points: what was discussed, decided, asked for, and anything to follow up. Plain facts, "
    "no greetings, no secrets (passwords, tokens). Answer with the bullet points only."
)


def episode_path(safe_conversation: str, day: str) -> str:
    """Where the episode of one conversation-day lives."""
    return f"{EPISODES_DIR}/{safe_conversation}/{day}.md"


def guests_day(workspace: Workspace, rel: str) -> bool:
    """True for the episode ``rel`` of a day with no message of the owner's own chat: every user row of its log
    says ``private: false`` (a friend's chat, a group, a served client's; the agent marks the message's row, not
    the reply's). Their words never feed the owner's profile. A day whose log is gone, or whose rows predate the
    mark, counts as the owner's."""
    conv, name = rel.rsplit("/", 2)[-2:]
    rows = workspace.read_jsonl(f"{CONVERSATIONS_DIR}/{conv}/{name.removesuffix('.md')}.jsonl")
    marks = [row["private"] for row in rows if "private" in row]
    return bool(marks) and not any(marks)


def settled_days(workspace: Workspace, now: datetime, settle_minutes: float) -> list[tuple[str, str]]:
    """(conversation folder, day) pairs whose log is quiet and whose episode is missing or stale."""
    found = []
    quiet_before = now.timestamp() - settle_minutes * 60
    written = _written(workspace)
    for rel in workspace.list(f"{CONVERSATIONS_DIR}/*/*.jsonl"):
        _, conv, name = rel.split("/")
        day = name[: -len(".jsonl")]
        log_mtime = workspace.mtime(rel) or 0.0
        if log_mtime > quiet_before:
            continue
        episode_mtime = workspace.mtime(episode_path(conv, day))
        if episode_mtime is None and written.get(f"{conv}/{day}", -1.0) >= log_mtime:
            continue  # the owner deleted it, and the day has not changed since
        if episode_mtime is None or episode_mtime < log_mtime:
            found.append((conv, day))
    return found


def _written(workspace: Workspace) -> dict[str, float]:
    """Which log state each episode was written from (``conv/day`` -> the day log's mtime); {} when the file is
    missing or damaged (only a deleted episode may then come back once)."""
    try:
        data = workspace.read_json(WRITTEN_STATE, default={})
    except ValueError:
        return {}
    return cast(dict[str, float], data) if isinstance(data, dict) else {}


def transcript(rows: Sequence[Mapping[str, object]], max_chars: int = MAX_INPUT_CHARS) -> str:
    """The day's turns as 'HH:MM role: text' lines; the middle is cut when too long."""
    lines = [f"{str(r.get('time', ''))[11:16]} {r.get('speaker') or r.get('role')}: {r.get('text', '')}" for r in rows]
    text = "\n".join(lines)
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return text[:half] + "\n[…]\n" + text[-half:]


def write_episode(workspace: Workspace, complete: Complete, conv: str, day: str, min_turns: int = 2) -> str | None:
    """Summarise one day; returns the episode path, or None when skipped."""
    rows = workspace.read_jsonl(f"{CONVERSATIONS_DIR}/{conv}/{day}.jsonl")
    if len(rows) < min_turns:
        return None
    messages = [
        {"role": "system", "content": EPISODE_PROMPT},
        {"role": "user", "content": f"Conversation {conv}, {day}:\n{transcript(rows)}"},
    ]
    summary = call_model(complete, messages).strip()
    if not summary:
        log.warning("episode for %s on %s: the model answered nothing; skipped", conv, day)
        return None
    if len(summary) > MAX_EPISODE_CHARS:
        log.warning("episode for %s on %s: answer of %d chars cut to %d", conv, day, len(summary), MAX_EPISODE_CHARS)
        cut = summary[:MAX_EPISODE_CHARS]
        summary = cut[: cut.rfind("\n")].rstrip() if "\n" in cut else cut
    rel = episode_path(conv, day)
    marked = any(is_untrusted(row) for row in rows)  # outside content that day: its summary is outside too
    workspace.write_text(rel, f"{UNTRUSTED_FRONT_MATTER if marked else ''}# {conv} — {day}\n\n{summary}\n")
    written = _written(workspace)
    written[f"{conv}/{day}"] = workspace.mtime(f"{CONVERSATIONS_DIR}/{conv}/{day}.jsonl") or 0.0
    workspace.write_json(WRITTEN_STATE, written)
    return rel


#: Model-call failures (``LLMError.kind``) that are about the server, not the day: the run stops at the first.
SERVER_DOWN_KINDS = frozenset({"connection", "timeout", "auth"})


def write_settled_episodes(
    workspace: Workspace, complete: Complete, settings: EpisodesSettings, now: datetime, tz: Any = None
) -> list[str]:
    """Write episodes for settled days (at most ``episodes.max_per_run``); returns their paths."""
    if not settings.enabled:
        return []
    written = []
    calls, max_calls, min_turns = 0, settings.max_per_run, settings.min_turns
    for conv, day in settled_days(workspace, now, settings.settle_minutes):
        if calls >= max_calls:
            break
        # A day too short for an episode stays pending; it must not take the place of one worth a call.
        if len(workspace.read_jsonl(f"{CONVERSATIONS_DIR}/{conv}/{day}.jsonl")) < min_turns:
            continue
        calls += 1
        try:
            rel = write_episode(workspace, complete, conv, day, min_turns)
        except Exception as exc:  # one failing day must not stop the others
            log.warning("episode for %s on %s failed: %s: %s", conv, day, type(exc).__name__, str(exc)[:200])
            if getattr(exc, "kind", None) in SERVER_DOWN_KINDS:
                break  # the model server is down or refuses the key: every other day would fail the same way
            continue
        if rel:
            written.append(rel)
    return written
