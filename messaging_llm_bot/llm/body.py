"""A Chat Completions request's JSON body, with the parts that stay the same between requests encoded once.

The answer schema (``response_format.json_schema.schema``) and the native tool specs (``tools``) are the same
objects request after request (``agent/native.py`` SkillFormats keeps them byte-stable and never changes them in
place): about 6 KB of nested objects, two thirds of what encoding a turn's body cost (0.2-0.4 ms of CPU a call on
this project's test machine). ``BodyEncoder`` keeps their text by object identity and joins it into the body;
the bytes are the same as ``json.dumps(body, allow_nan=False)``, what `requests`' ``json=`` sent.
"""

from __future__ import annotations

import json
import threading

from messaging_llm_bot.llm.wire import JsonObject

#: Where in a body the stable objects sit: their text is kept by identity.
STABLE_PATHS = (("tools",), ("response_format", "json_schema", "schema"))
_PREFIXES = {path[:depth] for path in STABLE_PATHS for depth in range(1, len(path))}


class BodyEncoder:
    """``encode(body)``: the body's UTF-8 JSON; the objects at ``STABLE_PATHS`` encoded once each (thread-safe)."""

    KEEP = 8  # skill sets alternate (the owner's and the guests'), a reload makes new objects

    def __init__(self) -> None:
        # id -> (the object, kept so its id is not reused while remembered; its text)
        self._known: dict[int, tuple[object, str]] = {}
        self._lock = threading.Lock()

    def encode(self, body: JsonObject) -> bytes:
        """``json.dumps(body, allow_nan=False)`` as UTF-8; raises ValueError for NaN or infinity as it does."""
        return self._text(body, ()).encode("utf-8")

    def _text(self, value: object, path: tuple[str, ...]) -> str:
        if path in STABLE_PATHS and isinstance(value, (dict, list)):
            return self._stable(value)
        if isinstance(value, dict) and (path == () or path in _PREFIXES):
            fields = (f"{json.dumps(key)}: {self._text(item, (*path, key))}" for key, item in value.items())
            return "{" + ", ".join(fields) + "}"
        return json.dumps(value, allow_nan=False)

    def _stable(self, value: dict[str, object] | list[object]) -> str:
        with self._lock:
            known = self._known.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        text = json.dumps(value, allow_nan=False)
        with self._lock:
            if len(self._known) >= self.KEEP:
                self._known.pop(next(iter(self._known)))
            self._known[id(value)] = (value, text)
        return text
