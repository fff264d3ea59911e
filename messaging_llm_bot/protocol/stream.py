"""Streaming guard: which part of a still-arriving model output may be shown to the user.

The text of a skill call must never reach the user, not even its first characters; a
``{"reply": "..."}`` object is shown as its decoded string while it streams.
"""

from __future__ import annotations

from collections.abc import Collection

from messaging_llm_bot.protocol.lenient_json import REPLY_PREFIX_RE as _REPLY_PREFIX_RE
from messaging_llm_bot.protocol.lenient_json import decode_partial_string as _decode_partial_string
from messaging_llm_bot.protocol.lenient_json import open_region, scan, strip_think
from messaging_llm_bot.protocol.parse import calls_from_value, parse_model_output
from messaging_llm_bot.protocol.templates import TEMPLATE_CALL_MARKERS

#: Chat templates' call markers, lower-cased as ``feed`` compares them.
_TEMPLATE_MARKERS = tuple(marker.lower() for marker in TEMPLATE_CALL_MARKERS)


class StreamGuard:
    """Decides what part of a streaming model output may be shown to the user: never the text of a skill call."""

    def __init__(self, skill_names: Collection[str] = ()):
        self._names = frozenset(skill_names)
        self._is_call = False
        # body[:_prose_end] is settled plain prose without JSON values: later text cannot change
        # it, so each feed only scans what came after (feed is called once per streamed delta)
        self._prose_end = 0
        self._body_start = 0

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
            self._body_start, self._prose_end = len(raw) - len(body), 0
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
                return _decode_partial_string(body[m.end() :])
            if candidates:
                return parse_model_output(body[:settled_end], self._names).reply or None
            return None
        self._prose_end = settled_end  # prose first, so no reply object to unwrap later
        return body[:settled_end].strip() or None
