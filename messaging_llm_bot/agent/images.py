"""Images in a turn: the content parts the model gets, and what the trace keeps instead of the pixels.

An image goes to the model in its turn's requests only, as an OpenAI ``image_url`` part holding a
base64 ``data:`` URI. The history keeps the turn's text, whose placeholder names the saved file and its
size (``[photo: inbox/2026-12-01/photo-5.jpg, 1568x1176]``, written by the frontend), never the bytes, so
later prompts do not grow; the trace keeps each image's type, size and bytes, not its pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant_framework.json_types import JsonObject
from assistant_framework.media.images import PreparedImage
from messaging_llm_bot.llm.wire import Message

#: What an image part's URL becomes in a trace.
OMITTED = "[image omitted from the trace: {}]"


@dataclass(frozen=True)
class ImageInput:
    """One image of a message: where the original was saved (in the chat's own area for a guest) and the
    prepared copy the model sees (downscaled, without metadata)."""

    path: str
    image: PreparedImage

    def size(self) -> dict[str, object]:
        """What the trace records of it."""
        image = self.image
        return {
            "path": self.path,
            "mime_type": image.mime_type,
            "width": image.width,
            "height": image.height,
            "bytes": len(image.data),
            "original": f"{image.original_width}x{image.original_height}",
        }


def user_content(text: str, images: tuple[ImageInput, ...]) -> str | list[JsonObject]:
    """A user message's ``content``: the text alone, or a text part followed by one ``image_url`` part per image."""
    if not images:
        return text
    parts: list[JsonObject] = [{"type": "text", "text": text}]
    for item in images:
        parts.append({"type": "image_url", "image_url": {"url": item.image.data_uri, "detail": "auto"}})
    return parts


def content_text(content: object) -> str:
    """The text of a message's ``content`` (a string, or the text parts of a list; an image counts as none)."""
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content or "")


def without_pixels(messages: list[Message]) -> list[Message]:
    """``messages`` with every image part's data URI replaced by its type and size (for traces): a message with
    parts is a copy, one of plain text is itself (a request's messages are made for it and not changed after;
    the trace writer redacts a copy)."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            message = {**message, "content": [_described(part) for part in content]}
        out.append(message)
    return out


def _described(part: object) -> object:
    if not (isinstance(part, dict) and part.get("type") == "image_url"):
        return part
    url = str((part.get("image_url") or {}).get("url") or "")
    head, _, data = url.partition(",")
    kind = head.removeprefix("data:").split(";")[0] or "image"
    return {"type": "image_url", "image_url": {"url": OMITTED.format(f"{kind}, {len(data) * 3 // 4 // 1024} KB")}}
