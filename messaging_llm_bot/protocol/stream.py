"""Streaming guard: which part of a still-arriving model output may be shown to the user.

The text of a skill call must never reach the user, not even its first characters; a
``{"reply": "..."}`` object is shown as its decoded string while it streams.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from messaging_llm_bot.protocol.lenient_json import REPLY_PREFIX_RE as _REPLY_PREFIX_RE
from messaging_llm_bot.protocol.lenient_json import (
    JsonCandidate,
    OpenWalk,
    ThinkCut,
    decode_string_part,
    open_region,
    scan,
)
from messaging_llm_bot.protocol.parse import calls_from_value, parse_model_output
from messaging_llm_bot.protocol.templates import TEMPLATE_CALL_MARKERS

#: Chat templates' call markers, lower-cased as ``feed`` compares them.
_TEMPLATE_MARKERS = tuple(marker.lower() for marker in TEMPLATE_CALL_MARKERS)
_THINK_MARKERS = ("<think>", "<thinking>", "<reasoning>")
#: The output's start that decides whether it may be a reasoning block or a template's call: one character more
#: than the longest marker (a longer start is none of them).
_HEAD_CHARS = max(len(marker) for marker in (*_TEMPLATE_MARKERS, *_THINK_MARKERS)) + 1
#: How much of the text fed before a feed checks again: a marker cut by the end of that text is found whole.
_MARKER_OVERLAP = max(len(marker) for marker in _TEMPLATE_MARKERS) - 1
#: How much of a text's start and of the text fed before it a feed compares: a text that does not start with
#: the one before (the caller started again with another) is checked whole; one that does is checked from
#: where the last feed ended (a stream's text only grows).
_SAME_CHARS = 64
_NON_SPACE_RE = re.compile(r"\S")


@dataclass
class _OpenReply:
    """A ``{"reply": "...`` object whose string is still arriving: its text decoded up to ``scanned`` (an index
    in the body)."""

    scanned: int
    text: str


class StreamGuard:
    """Decides what part of a streaming model output may be shown to the user: never the text of a skill call.

    ``feed`` is called once per streamed delta with the whole text so far; what one feed decided stays decided
    and the next looks only at the text added since (a marker's or closing tag's length before it), so a long
    answer costs its length, not its length squared. ``scanned`` counts the characters the feeds searched."""

    def __init__(self, skill_names: Collection[str] = ()):
        self._names = frozenset(skill_names)
        self.scanned = 0
        self._start_over()

    def _start_over(self) -> None:
        self._is_call = False
        self._fed_head = self._fed_tail = ""  # the text fed before: its start, end and length (``_grew``)
        self._fed_len = 0
        self._head_at: int | None = None  # the first character that is not a space
        self._markers_from = 0  # template markers are searched for from here
        self._think = ThinkCut()
        # body[:_prose_end] is settled plain prose without JSON values: later text cannot change
        # it, so each feed only scans what came after
        self._prose_end = 0
        self._body_start = 0
        self._walk = OpenWalk()  # an open bracket or fence at _prose_end: checked on from where the last feed stopped
        # While a reply object's string streams, each feed decodes only the new text (``_reply_so_far``).
        self._open_reply: _OpenReply | None = None

    def feed(self, text_so_far: str) -> str | None:
        """User-visible text so far, or None while the output may still be (or is) a call."""
        if self._is_call:
            return None
        raw = text_so_far or ""
        if not self._grew(raw):
            self._start_over()  # the caller started again with another text: it is checked whole
            self._grew(raw)
        if self._held_for_a_marker(raw):
            return None
        searched = self._think.scanned
        body_start = self._think.feed(raw)
        self.scanned += self._think.scanned - searched
        if body_start is None or _NON_SPACE_RE.search(raw, body_start) is None:
            return None
        body = raw[body_start:]
        if self._body_start != body_start:  # a late </think> moved the body
            self._body_start, self._prose_end, self._open_reply = body_start, 0, None
            self._walk = OpenWalk()
        so_far = self._reply_so_far(body)
        if so_far is not None:
            return so_far
        walked = self._walk.scanned
        open_at = open_region(body, self._prose_end, self._walk)
        self.scanned += self._walk.scanned - walked + (len(body) if open_at is None else open_at) - self._prose_end
        settled = body[self._prose_end : open_at]
        candidates = scan(settled)
        if any(calls_from_value(c.value, self._names, c.raw)[0] for c in candidates):
            self._is_call = True
            return None
        settled_end = self._prose_end + len(settled)
        lead_end = self._prose_end + (candidates[0].outer[0] if candidates else len(settled))
        if _NON_SPACE_RE.search(body, 0, lead_end) is None:  # nothing but JSON so far: maybe a reply object
            m = _REPLY_PREFIX_RE.match(body)
            if open_at is not None and m and _NON_SPACE_RE.search(body, 0, open_at) is None:
                text, scanned = decode_string_part(body, m.end())
                self._open_reply = _OpenReply(scanned, text)
                return text
            if candidates and not _text_between(body, candidates, settled_end):
                return parse_model_output(body[:settled_end], self._names).reply or None
            if not candidates:
                return None
        self._prose_end = settled_end  # prose first, so no reply object to unwrap later
        return body[:settled_end].strip() or None

    def _grew(self, raw: str) -> bool:
        """True when ``raw`` is the text fed before and more: its length, start and end are compared (a stream's
        text only grows, and comparing it whole at every delta would cost its length squared again)."""
        grew = (
            len(raw) >= self._fed_len
            and raw.startswith(self._fed_head)
            and raw.endswith(self._fed_tail, 0, self._fed_len)
        )
        self._fed_head, self._fed_tail, self._fed_len = raw[:_SAME_CHARS], raw[-_SAME_CHARS:], len(raw)
        return grew

    def _held_for_a_marker(self, raw: str) -> bool:
        """True while the output starts as a reasoning block or a template's call may, or holds a call marker."""
        head = self._head(raw)
        if not head:
            return False
        if any(mk.startswith(head) for mk in _THINK_MARKERS):
            return True
        if any(mk.startswith(head[: len(mk)]) for mk in _TEMPLATE_MARKERS):
            return True  # a template's call marker, or the start of one
        if self._marker_in_new_text(raw):
            self._is_call = True
            return True
        return False

    def _head(self, raw: str) -> str:
        """The output's start from its first character that is not a space, lower-cased (``_HEAD_CHARS`` of it)."""
        if self._head_at is None:
            first = _NON_SPACE_RE.search(raw)
            if first is None:
                return ""
            self._head_at = self._markers_from = first.start()
        return raw[self._head_at : self._head_at + _HEAD_CHARS].lower()

    def _marker_in_new_text(self, raw: str) -> bool:
        """A template's call marker anywhere in the output: searched for in the text added since the last feed."""
        new = raw[max(self._head_at or 0, self._markers_from - _MARKER_OVERLAP) :].lower()
        self.scanned += len(new)
        self._markers_from = len(raw)
        return any(mk in new for mk in _TEMPLATE_MARKERS)

    def _reply_so_far(self, body: str) -> str | None:
        """The reply object's text so far when its string is still open (the body only grew since the last feed:
        ``feed`` started over otherwise): what the whole check would return, from the new text alone; None:
        check the whole body."""
        reply = self._open_reply
        if reply is None:
            return None
        self.scanned += len(body) - reply.scanned
        text, scanned = decode_string_part(body, reply.scanned)
        if scanned < len(body) and not (body[scanned] == "\\" and len(body) - scanned < len("\\u0000")):
            self._open_reply = None  # the string closed (or holds an escape JSON has not): the whole check
            return None
        reply.text, reply.scanned = reply.text + text, scanned
        return reply.text


def _text_between(body: str, candidates: list[JsonCandidate], end: int) -> bool:
    """True when ``body[:end]`` holds text after its first JSON value, outside the values: no reply object is then
    unwrapped, and the body is shown as prose is (what the whole parse gives), from then on checked as prose is."""
    after = candidates[0].outer[1]
    for candidate in candidates[1:]:
        if _NON_SPACE_RE.search(body, after, candidate.outer[0]) is not None:
            return True
        after = candidate.outer[1]
    return _NON_SPACE_RE.search(body, after, end) is not None
