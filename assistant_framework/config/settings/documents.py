"""The ``documents`` section: the bounds on reading a document sent in a chat (docs/documents.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import maybe, number, reads, whole


@dataclass(frozen=True)
class DocumentSettings:
    """The ``documents`` section; read at each document (``/reload`` applies it)."""

    #: A file larger than this is refused in one sentence before it is read.
    max_mb: float = field(default=20.0, metadata=reads(number, above=0, maximum=2000))
    #: A PDF's pages read (the first ones); the turn says when there were more.
    max_pages: int = field(default=300, metadata=reads(whole, minimum=1, maximum=100_000))
    #: Characters of text kept (saved and indexed); the turn says when the text was cut.
    max_chars: int = field(default=500_000, metadata=reads(whole, minimum=1000, maximum=50_000_000))
    #: Characters of the text put into the turn; the rest is read with the ``file`` skill.
    prompt_chars: int = field(default=3_000, metadata=reads(whole, minimum=0, maximum=200_000))
    #: Seconds the reader process may take before it is ended.
    timeout_seconds: float = field(default=60.0, metadata=reads(number, above=0, maximum=3600))
    #: MB the reader processes may take together; None: half of the machine's memory (media/reader_memory.py).
    reader_memory_mb: float | None = field(
        default=None, metadata=reads(maybe(number), null=True, above=0, maximum=1_000_000)
    )

    @property
    def max_bytes(self) -> int:
        """``max_mb`` in bytes (a megabyte is 1,000,000 bytes)."""
        return int(self.max_mb * 1_000_000)
