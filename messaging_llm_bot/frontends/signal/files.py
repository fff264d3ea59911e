"""What the model is given for a Signal message with files (a document, photos, an album): each file saved
in the chat's area and named in the prompt, the images among them prepared for a model that sees images."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from assistant_framework.config.settings import Settings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.frontends.attachments import SavedFile, attachment_prompt
from messaging_llm_bot.frontends.images import MAX_IMAGES, image_prompt, is_image, prepare, sees_images
from messaging_llm_bot.frontends.signal import media
from messaging_llm_bot.frontends.signal.client import SignalClient
from messaging_llm_bot.frontends.signal.settings import SignalMessage

if TYPE_CHECKING:  # pragma: no cover - the agent loads on the first turn
    from messaging_llm_bot.agent.images import ImageInput


@dataclass(frozen=True)
class FilesInput:
    """The prompt for the files, the images the model sees, and whether images went unseen (no vision)."""

    text: str
    images: tuple[ImageInput, ...]
    vision_missing: bool


async def files_input(
    client: SignalClient, area: Workspace, msg: SignalMessage, today: date, settings: Settings
) -> FilesInput | str:
    """Save the message's files in ``area`` and build the model's input; a sentence instead when no file
    could be fetched, or every file is an image that cannot go (HEIC, too large)."""
    results = await media.save_attachments(client, area, msg, today)
    saved = [r for r in results if not isinstance(r, str)]
    reasons = [r for r in results if isinstance(r, str)]
    if not saved:
        return reasons[0]  # why the file could not be fetched
    failed = [f"[Attachment] Another file could not be fetched: {r}" for r in results if isinstance(r, str)]
    seen = await _images(area, saved, settings.llm.image_max_side) if sees_images(settings) else {}
    refused = [v for v in seen.values() if isinstance(v, str)]
    if refused and len(refused) == len(saved):
        return refused[0]  # every file was an image that cannot go (HEIC, too large)
    parts = []
    images: tuple[ImageInput, ...] = ()
    for one in saved:
        got = seen.get(one.rel_path)
        if got is None:
            parts.append(attachment_prompt(one))
        elif isinstance(got, str):
            parts.append(f"{attachment_prompt(one)}\nIt is not shown to you: {got}")
        else:
            parts.append(image_prompt(one, got.image))
            images += (got,)
    vision_missing = not seen and any(is_image(one) for one in saved)
    return FilesInput("\n\n".join(parts + failed), images, vision_missing)


async def _images(area: Workspace, saved: list[SavedFile], max_side: int) -> dict[str, ImageInput | str]:
    """Per saved image (the first ``MAX_IMAGES`` of an album): ready for the model, or why it cannot go."""
    out: dict[str, ImageInput | str] = {}
    for one in [s for s in saved if is_image(s)][:MAX_IMAGES]:
        out[one.rel_path] = await prepare(area, one, max_side)
    return out
