"""Streaming guard: which part of a still-arriving model output may be shown to the user.

The text of a skill call must never reach the user, not even its first characters; a
``{"reply": "..."}`` object is shown as its decoded string while it streams.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from messaging_llm_bot.protocol.lenient_json import REPLY_PREFIX_RE as _REPLY_PREFIX_RE
from messaging_llm_bot.protocol.lenient_json import decode_string_part, open_region, scan, strip_think
from messaging_llm_bot.protocol.parse import calls_from_value, parse_model_output
from messaging_llm_bot.protocol.templates import TEMPLATE_CALL_MARKERS

#: Chat templates' call markers, lower-cased as ``feed`` compares them.
_TEMPLATE_MARKERS = tuple(marker.lower() for marker in TEMPLATE_CALL_MARKERS)


@dataclass
class _OpenReply:
    """A ``{"reply": "...`` object whose string is still arriving: its text decoded up to ``scanned`` (an index
    in the body), and the body up to there, which later text must start with."""

    scanned: int
    text: str
    seen: str


class StreamGuard:
    """Decides what part of a streaming model output may be shown to the user: never the text of a skill call."""

    def __init__(self, skill_names: Collection[str] = ()):
        self._names = frozenset(skill_names)
        self._is_call = False
        # body[:_prose_end] is settled plain prose without JSON values: later text cannot change
        # it, so each feed only scans what came after (feed is called once per streamed delta)
        self._prose_end = 0
        self._body_start = 0
        # While a reply object's string streams, each feed decodes only the new text (``_reply_so_far``): the
        # whole check again at every delta made a long streamed reply cost its length squared.
        self._open_reply: _OpenReply | None = None

    def feed(self, text_so_far: str) -> str | None:
        """User-visible text so far, or None while the output may still be (or is) a call."""
        if self._is_call:
            return None
        raw = text_so_far or ""
        head = raw.lstrip().lower()
        if head and any(mk.startswith(head) for mk in ("<think>", "<thinking>", "<reasoning>")):
            return None
        if head and any(mk.startswith(head[: len(mk)]) for mk in _TEMPLATE_MARKERS):
            return None  # a template's call marker, or the start of one
        if any(mk in head for mk in _TEMPLATE_MARKERS):
            self._is_call = True
            return None
        body, _ = strip_think(raw)
        if not body.strip():
            return None
        if self._body_start != len(raw) - len(body) or self._prose_end > len(body):
            # a late </think> moved the body, or the caller restarted with another text
            self._body_start, self._prose_end, self._open_reply = len(raw) - len(body), 0, None
        so_far = self._reply_so_far(body)
        if so_far is not None:
            return so_far
        open_at = open_region(body, self._prose_end)
        settled = body[self._prose_end : open_at]
        candidates = scan(settled)
        if any(calls_from_value(c.value, self._names, c.raw)[0] for c in candidates):
            self._is_call = True
            return None
        settled_end = self._prose_end + len(settled)
        lead_end = self._prose_end + (candidates[0].outer[0] if candidates else len(settled))
        if not body[:lead_end].strip():  # nothing but JSON so far: maybe a reply object
            m = _REPLY_PREFIX_RE.match(body)
            if open_at is not None and m and not body[:open_at].strip():
                text, scanned = decode_string_part(body, m.end())
                self._open_reply = _OpenReply(scanned, text, body[:scanned])
                return text
            if candidates:
                return parse_model_output(body[:settled_end], self._names).reply or None
            return None
        self._prose_end = settled_end  # prose first, so no reply object to unwrap later
        return body[:settled_end].strip() or None

    def _reply_so_far(self, body: str) -> str | None:
        """The reply object's text so far when its string is still open and the body only grew since the last
        feed (what the whole check would return, from the new text alone); None: check the whole body."""
        reply = self._open_reply
        if reply is None:
            return None
        if not body.startswith(reply.seen):  # the caller restarted with another text
            self._open_reply = None
            return None
        text, scanned = decode_string_part(body, reply.scanned)
        if scanned < len(body) and not (body[scanned] == "\\" and len(body) - scanned < len("\\u0000")):
            self._open_reply = None  # the string closed (or holds an escape JSON has not): the whole check
            return None
        reply.text, reply.scanned, reply.seen = reply.text + text, scanned, body[:scanned]
        return reply.text
