"""The doctor's documents check: the memory the document readers get on this machine (docs/documents.md,
*Memory*), a warning when documents are read one at a time or not at all."""

from __future__ import annotations

from assistant_framework.hints import CLI
from messaging_llm_bot.ops.channels.doctor import OK, WARN, Check, Context

NAME = "document readers"
KEY = "documents.reader_memory_mb"


def check_documents(ctx: Context) -> list[Check]:
    """OK with each reader's memory when two fit, else WARN naming ``documents.reader_memory_mb``."""
    from assistant_framework.media.reader_memory import READER_MEMORY_FLOOR, reader_memory
    from messaging_llm_bot.conversation.documents import READERS_AT_ONCE, too_little_memory

    memory = reader_memory(ctx.settings.documents.reader_memory_mb, READERS_AT_ONCE)
    of = f"of {memory.budget // 1_000_000} MB: {memory.source}"
    fix = (
        f"give the bot more memory, or set the readers' memory knowing what else runs here: "
        f"`{CLI} config set {KEY} {2 * READER_MEMORY_FLOOR // 1_000_000}`"
    )
    if not memory.fits:
        return [Check(NAME, WARN, f"no document is read: {too_little_memory(memory).reason} ({of})", fix)]
    each = memory.per_reader // 1_000_000
    if memory.alone:
        return [Check(NAME, WARN, f"one at a time, {each} MB ({of}); the others wait", fix)]
    return [Check(NAME, OK, f"{READERS_AT_ONCE} at once, {each} MB each ({of})")]
