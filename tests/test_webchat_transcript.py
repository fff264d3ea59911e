"""The web chat's message store after a year of use: a start reads its newest lines, not all of them, and the
once-map of reply parts stays bounded while a part written again is still written once."""

from __future__ import annotations

import json
from pathlib import Path

from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.webchat.transcript import HISTORY_LIMIT, KEYS_KEPT, REL, Transcript

#: Messages in the store: a year of 50 turns a day, an owner's message and a reply each.
A_YEAR = 36_500


def _bytes_read() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def _a_year(ws: Workspace) -> None:
    lines = []
    for n in range(1, A_YEAR + 1):
        owner = n % 2 == 1
        message = {"id": n, "role": "owner" if owner else "assistant", "text": f"message {n} " + "words " * 30}
        message["key"] = f"in:{n}" if owner else f"item-{n - 1}"
        message["part"] = 0
        lines.append(json.dumps(message))
    ws.write_text(REL, "\n".join(lines) + "\n")


def test_a_start_reads_the_newest_lines_and_a_part_written_again_is_written_once(tmp_path):
    ws = Workspace(tmp_path / "ws")
    _a_year(ws)
    size = ws.path(REL).stat().st_size
    before = _bytes_read()
    transcript = Transcript(ws)
    assert _bytes_read() - before < size / 5  # it read all of it (10 MB after a year)
    assert [m["id"] for m in transcript.recent()] == list(range(A_YEAR - HISTORY_LIMIT + 1, A_YEAR + 1))
    assert len(transcript._parts) <= KEYS_KEPT
    # The last turn's reply, written again by a restart that finishes it: found, not written twice.
    again, fresh = transcript.append("assistant", "the reply", f"item-{A_YEAR - 1}", 0)
    assert not fresh and again["id"] == A_YEAR
    message, fresh = transcript.append("owner", "a new day")
    assert fresh and message["id"] == A_YEAR + 1
    assert ws.read_text(REL).count("\n") == A_YEAR + 1


def test_the_once_map_stays_bounded_while_running_and_keeps_the_newest(tmp_path):
    ws = Workspace(tmp_path / "ws")
    transcript = Transcript(ws)
    for n in range(KEYS_KEPT + 50):
        transcript.append("assistant", f"part {n}", f"item-{n}", 0)
    assert len(transcript._parts) <= KEYS_KEPT
    assert not transcript.append("assistant", "again", f"item-{KEYS_KEPT + 49}", 0)[1]
    assert not Transcript(ws).append("assistant", "again", f"item-{KEYS_KEPT + 49}", 0)[1]
