"""A tool's answer as text for the model: text parts as they are, images, audio and embedded
resources saved to the workspace and named, links named, structured content as JSON.

The parts are read by their ``type`` (the SDK's content models), so this module needs no SDK import.
An outside server's answer is bounded here: at most ``MAX_PARTS`` parts, each saved file at most
``MAX_FILE_BYTES``; the manager cuts the text to the result limit afterwards.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from assistant_framework.workspace import Workspace, atomic_write_bytes

if TYPE_CHECKING:
    from mcp_types import CallToolResult

MAX_PARTS = 50
#: The ``_meta`` key of an answer the transport cut (mcp/stdio.py): how many parts it dropped before they were built.
LEFT_OUT = "assistant-framework/parts-left-out"
MAX_FILE_BYTES = 20 * 1024 * 1024
#: A text resource this short is also shown inline, besides the file it is saved to.
INLINE_RESOURCE_CHARS = 1000
_EXTENSION = re.compile(r"^\.[A-Za-z0-9]{1,8}$")
_counter_lock = threading.Lock()
_counter = 0


class ToolError(Exception):
    """A tool call that did not work; the message is one sentence for the model.

    ``own_words``: the sentence is this host's alone (a timeout, a restart); unset, it may carry the
    server's words (its error content, its refusal, an exception's text) and is outside content."""

    def __init__(self, message: str, *, own_words: bool = False) -> None:
        super().__init__(message)
        self.own_words = own_words


@dataclass(frozen=True)
class SavedPart:
    """Where a part of an answer was saved: a path relative to the workspace the call ran in."""

    rel: str
    kind: str
    size: int


TRACEBACK = "Traceback (most recent call last)"


def first_sentence(text: str, limit: int = 300) -> str:
    """A server's error text as one line: a traceback becomes what came before it and its last line,
    runs of spaces collapse, the rest is cut."""
    text = str(text)[:100_000]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if TRACEBACK in text and lines:
        head = text[: text.index(TRACEBACK)].strip().rstrip(":").strip()
        lines = [part for part in (head, lines[-1]) if part]
    flat = " ".join(" ".join(lines).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _next_number() -> int:
    global _counter
    with _counter_lock:
        _counter += 1
        return _counter


def _extension(mime_type: str, fallback: str) -> str:
    guessed = mimetypes.guess_extension((mime_type or "").split(";")[0].strip().lower()) or fallback
    return guessed if _EXTENSION.match(guessed) else fallback


class PartSaver:
    """Saves the binary and resource parts of one call's answer under ``folder`` of a workspace."""

    def __init__(self, workspace: Workspace, folder: str, tool: str) -> None:
        self.workspace = workspace
        self.folder = folder
        self.tool = re.sub(r"[^A-Za-z0-9_-]+", "_", tool)[:40] or "tool"

    def save(self, data: bytes, mime_type: str, kind: str) -> SavedPart:
        now = datetime.now()
        name = f"{now:%H%M%S}-{self.tool}-{_next_number()}{_extension(mime_type, '.bin')}"
        rel = f"{self.folder}/{now:%Y-%m-%d}/{name}"
        atomic_write_bytes(self.workspace.path(rel), data)
        return SavedPart(rel, kind, len(data))


def _decoded(data: Any) -> bytes | None:
    if not isinstance(data, str) or len(data) > MAX_FILE_BYTES * 4 // 3 + 8:
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _size_text(size: int) -> str:
    return f"{size} bytes" if size < 10_000 else f"{size / 1024:.0f} KB"


def _binary(part: Any, kind: str, saver: PartSaver) -> str:
    mime_type = str(getattr(part, "mime_type", "") or "application/octet-stream")
    data = _decoded(getattr(part, "data", None))
    if data is None:
        return f"[{kind} ({mime_type}) not saved: not base64 data of at most {MAX_FILE_BYTES // (1024 * 1024)} MB]"
    saved = saver.save(data, mime_type, kind)
    return f"[{kind} saved to {saved.rel} ({mime_type}, {_size_text(saved.size)})]"


def _resource(part: Any, saver: PartSaver) -> str:
    resource = getattr(part, "resource", None)
    uri = str(getattr(resource, "uri", "") or "")[:300]
    mime_type = str(getattr(resource, "mime_type", "") or "")
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        data = text.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            return f"[resource {uri} not saved: over {MAX_FILE_BYTES // (1024 * 1024)} MB]"
        saved = saver.save(data, mime_type or "text/plain", "resource")
        shown = f"\n{text}" if len(text) <= INLINE_RESOURCE_CHARS else ""
        return f"[resource {uri} saved to {saved.rel} ({mime_type or 'text/plain'}, {_size_text(saved.size)})]{shown}"
    blob = _decoded(getattr(resource, "blob", None))
    if blob is None:
        return f"[resource {uri} not saved: not base64 data of at most {MAX_FILE_BYTES // (1024 * 1024)} MB]"
    saved = saver.save(blob, mime_type or "application/octet-stream", "resource")
    return f"[resource {uri} saved to {saved.rel} ({mime_type or 'binary'}, {_size_text(saved.size)})]"


def _part_text(part: Any, saver: PartSaver) -> str:
    kind = getattr(part, "type", None)
    if kind == "text":
        return str(getattr(part, "text", "") or "")
    if kind in ("image", "audio"):
        return _binary(part, kind, saver)
    if kind == "resource":
        return _resource(part, saver)
    if kind == "resource_link":
        name = str(getattr(part, "name", "") or "")[:200]
        return f"[resource link: {name} {str(getattr(part, 'uri', '') or '')[:300]}]".replace("  ", " ")
    return f"[a {str(kind)[:40]} part this assistant does not read]"


def _dropped(result: CallToolResult) -> int:
    """The parts the transport dropped before the answer was built (0: none, or a server's own ``_meta``)."""
    count = (getattr(result, "meta", None) or {}).get(LEFT_OUT)
    return count if isinstance(count, int) and not isinstance(count, bool) and 0 < count < 10**9 else 0


def result_text(result: CallToolResult, saver: PartSaver) -> str:
    """The text the model reads for a ``CallToolResult``; ``ToolError`` (one sentence) when the tool
    reported an error."""
    parts = list(getattr(result, "content", None) or [])
    if getattr(result, "is_error", False):
        said = " ".join(str(getattr(p, "text", "")) for p in parts if getattr(p, "type", None) == "text")
        raise ToolError(first_sentence(said) or "the tool reported an error without saying what")
    pieces = [_part_text(part, saver) for part in parts[:MAX_PARTS]]
    left_out = max(0, len(parts) - MAX_PARTS) + _dropped(result)
    if left_out:
        pieces.append(f"[... {left_out} more parts left out]")
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(getattr(p, "type", None) == "text" for p in parts):
        pieces.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(piece for piece in pieces if piece)
    return text or "(the tool returned nothing)"
