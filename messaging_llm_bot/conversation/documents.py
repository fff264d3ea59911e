"""Documents from any chat frontend: their text read (assistant_framework/media/documents.py, in a worker
thread; a PDF or office file in a worker process with a time bound), indexed for memory search in the owner's chat, and
the turn's text: the attachment note, the start of the text and how much more there is.

At most ``READERS_AT_ONCE`` worker processes run in the whole bot, whatever the number of chats and channels
sending documents: ten chats' PDFs at once would be an OOM kill on a small machine. Each gets the memory bound
``reader_memory`` gives this machine (at most 2 GiB); where that leaves too little for two, a reader runs alone
(it holds every slot), and where even one would not fit, the document is refused in one sentence and no reader
starts. The others wait in order within their message's time bound; one whose wait runs out is told what a
reader that ran out of time is told.

The text is outside content like the file: the turn that carries it is untrusted (every file makes it so), the
saved text is marked ``untrusted`` in its front matter, and memory search shows its hits as outside content.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from assistant_framework.config.settings import DocumentSettings
from assistant_framework.media.documents import (
    IN_THREAD_KINDS,
    DocumentRefused,
    DocumentText,
    document_kind,
    read_document,
    took_longer,
)
from assistant_framework.media.reader_memory import READER_MEMORY_FLOOR, ReaderMemory, reader_memory
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.attachments import SavedFile, attachment_prompt
from messaging_llm_bot.conversation.slots import Slots

log = logging.getLogger(__name__)
DEFAULT_LIMITS = DocumentSettings()
#: Document reader processes at once in the whole bot (each within its share of the machine's memory).
READERS_AT_ONCE = 2
READERS = Slots(READERS_AT_ONCE)


class DocumentIndex(Protocol):
    """Where a document's saved text goes so memory search finds it at once (the owner's ``MemoryService``)."""

    def index_files(self, paths: Sequence[str]) -> int:
        """Bring these workspace-relative files into the index now."""
        ...


def is_document(saved: SavedFile) -> bool:
    """True for a saved file whose text can be read (PDF, Word, Excel, PowerPoint, OpenDocument, HTML, CSV, text)."""
    return document_kind(saved.mime_type, saved.rel_path) is not None


def refused_text(saved: SavedFile, refused: DocumentRefused) -> str:
    """The one sentence for a document whose text could not be read (the file itself stays saved)."""
    name = saved.rel_path.rsplit("/", 1)[-1]
    return f"📄 I saved {name} at {saved.rel_path}, but I cannot read it: {refused.reason}."


def text_prompt(saved: SavedFile, read: DocumentText, origin: str = "") -> str:
    """The turn's text for a document read: the attachment note, then the start of its text and how to read on."""
    pages = f"{read.pages} pages, " if read.pages else ""
    lines = [
        attachment_prompt(saved, origin=origin),
        f"[Document text] {pages}{read.chars:,} characters, saved at {read.text_path}"
        + (f" (only the first {read.pages_read} pages were read)" if read.pages_read < read.pages else "")
        + (" (cut at the size bound)" if read.cut else "")
        + (f". The first {len(read.head):,} characters:" if len(read.head) < read.chars else ". The whole text:"),
        read.head,
    ]
    rest = read.chars - len(read.head)
    if rest > 0:
        lines.append(
            f"[{rest:,} more characters: read them with the file skill, "
            f'{{"action": "read", "path": "{read.text_path}", "offset": {read.rest_offset}}}]'
        )
    return "\n".join(lines)


async def documents_prompts(
    area: Workspace,
    saved: Sequence[SavedFile],
    index: DocumentIndex | None,
    origin: str = "",
    limits: DocumentSettings = DEFAULT_LIMITS,
) -> dict[str, str | DocumentRefused]:
    """The turn's text for each document among ``saved`` (by its path), read one after the other within one
    ``limits.timeout_seconds`` for them all: a message of ten files that each take the bound must not hold its turn
    ten times as long. A document left without time is named with that reason."""
    found: dict[str, str | DocumentRefused] = {}
    deadline = time.monotonic() + limits.timeout_seconds
    for one in saved:
        if not is_document(one):
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            found[one.rel_path] = DocumentRefused(
                f"the documents before it took the {limits.timeout_seconds:.0f} seconds I read a message's documents in"
            )
            continue
        found[one.rel_path] = await document_prompt(area, one, index, origin, replace(limits, timeout_seconds=left))
    return found


async def document_prompt(
    area: Workspace,
    saved: SavedFile,
    index: DocumentIndex | None,
    origin: str = "",
    limits: DocumentSettings = DEFAULT_LIMITS,
) -> str | DocumentRefused:
    """The turn's text for one saved document, or why its text could not be read. ``index``: the owner's memory
    index (None in a guest's chat: a guest's files stay out of the owner's memory)."""
    kind = document_kind(saved.mime_type, saved.rel_path)
    if kind is None:
        return attachment_prompt(saved, origin=origin)
    try:
        read = await _read(area, saved.rel_path, kind, limits)
    except OSError as err:
        log.warning("documents: could not read %s: %s", saved.rel_path, err)
        return DocumentRefused(f"the file could not be read back ({err.strerror or err})")
    if isinstance(read, DocumentRefused):
        return read
    if index is not None:
        try:
            await asyncio.to_thread(index.index_files, [read.text_path])
        except Exception as err:  # noqa: BLE001 - the periodic refresh finds it later; the turn goes on
            log.warning("documents: indexing %s failed (the next refresh tries again): %s", read.text_path, err)
    return text_prompt(saved, read, origin)


def too_little_memory(memory: ReaderMemory) -> DocumentRefused:
    """Why no reader runs: not even one gets ``READER_MEMORY_FLOOR`` of what the machine can spare."""
    return DocumentRefused(
        f"a document reader needs {READER_MEMORY_FLOOR // 1_000_000} MB of memory and this machine can spare"
        f" only {memory.budget // 1_000_000} MB for it"
    )


async def _read(area: Workspace, rel: str, kind: str, limits: DocumentSettings) -> DocumentText | DocumentRefused:
    """The document read in a worker thread; one that needs a reader process waits for one of ``READERS`` (all
    of them when it must run alone), and its wait counts in ``limits.timeout_seconds``."""
    if kind in IN_THREAD_KINDS:
        return await asyncio.to_thread(read_document, area, rel, kind, limits)
    memory = await asyncio.to_thread(reader_memory, limits.reader_memory_mb, READERS_AT_ONCE)
    if not memory.fits:
        log.warning(
            "documents: %s not read: the readers may take %d MB here (%s), a reader needs %d MB",
            rel,
            memory.budget // 1_000_000,
            memory.source,
            READER_MEMORY_FLOOR // 1_000_000,
        )
        return too_little_memory(memory)

    def within(left: float) -> DocumentText | DocumentRefused:
        read = read_document(area, rel, kind, replace(limits, timeout_seconds=left), memory.per_reader)
        # The time it had is the document's bound, the wait for a reader included.
        return took_longer(limits.timeout_seconds) if read == took_longer(left) else read

    read = await READERS.run(limits.timeout_seconds, within, READERS.size if memory.alone else 1)
    return took_longer(limits.timeout_seconds) if read is None else read
