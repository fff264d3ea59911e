"""Documents users send (PDF, Word, Excel, PowerPoint, OpenDocument, HTML, CSV, plain text): their text,
read within bounds, saved beside the original and marked as outside content.

A PDF or an office file is read in a separate Python process (``document_text``) that a time bound ends and
a memory bound holds (``reader_memory``: what this machine can spare): a crafted PDF that makes the reader loop,
or a DOCX that unpacks to gigabytes, costs one worker and one sentence, never the bot. The worker is given the
file's path and no environment beyond ``PATH`` (no token, no key). A file that is plainly not of its kind is
refused before any process starts; plain text, CSV and HTML are read in the calling thread. Blocking: call it
from a worker thread, never on an event loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from assistant_framework.config.settings import DocumentSettings
from assistant_framework.media.document_text import KIND_BY_SUFFIX, KIND_BY_TYPE, TOOK_MORE_MEMORY, extract
from assistant_framework.media.reader_memory import READER_MEMORY_MOST
from assistant_framework.stores.provenance import UNTRUSTED_FRONT_MATTER
from assistant_framework.workspace import Workspace, atomic_write_bytes

#: Kinds read in the calling thread: decoding text and the stdlib's HTML parser read a bounded prefix in time
#: linear in it, with nothing a file can make loop; the office formats and PDF go to the worker process.
IN_THREAD_KINDS = ("text", "html")
#: The end of the saved text's name: ``report.pdf`` → ``report.pdf.text.md`` (the memory source ``documents``).
TEXT_SUFFIX = ".text.md"


@dataclass(frozen=True)
class DocumentText:
    """A document read: where its text is saved, how long it is, the pages (a PDF's) read and in the file,
    whether the text was cut at the bound, its first ``prompt_chars`` characters, and where in the saved file
    (front matter and title before the text) the rest begins: the ``file`` skill's ``offset`` to read on."""

    text_path: str
    chars: int
    pages: int
    pages_read: int
    cut: bool
    head: str
    rest_offset: int


@dataclass(frozen=True)
class DocumentRefused:
    """Why a document's text could not be read: a clause for "…, but …" (``it has no text layer``)."""

    reason: str


def document_kind(mime_type: str | None, name: str) -> str | None:
    """What reader a file takes (pdf, docx, xlsx, pptx, odf, html, text), by its name's suffix or else its
    type; None for a file that is no document (a photo, an archive, audio)."""
    suffix = PurePosixPath(name.lower()).suffix
    if suffix in KIND_BY_SUFFIX:
        return KIND_BY_SUFFIX[suffix]
    return KIND_BY_TYPE.get((mime_type or "").split(";")[0].strip().lower())


def _size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1000:.0f} KB"


def _not_the_format(path: Path, kind: str, size: int) -> DocumentRefused | None:
    """Why a file is plainly not of its kind (a PDF without its header or end mark, an office file that is no
    zip archive), seen from a few bytes in this thread: no worker process is started for it."""
    if kind == "pdf":
        with path.open("rb") as handle:
            head = handle.read(1024)
            handle.seek(max(0, size - 65536))
            tail = handle.read()
        if b"%PDF-" not in head or b"%%EOF" not in tail:
            return DocumentRefused("it is not a PDF I can read (no PDF header or end)")
    elif kind in ("docx", "xlsx", "pptx", "odf") and not zipfile.is_zipfile(path):
        return DocumentRefused(f"it is not a {kind.upper()} file I can read (not a zip archive)")
    return None


def took_longer(seconds: float) -> DocumentRefused:
    """Why a document was not read within its time bound (the worker ended, or no reader free in time)."""
    return DocumentRefused(f"reading it took longer than {seconds:.0f} seconds")


def _run_worker(path: str, kind: str, limits: DocumentSettings, memory: int) -> dict[str, object] | DocumentRefused:
    """The worker's answer for one file read within ``memory`` bytes of address space, or why there is none (it
    took too long, it failed)."""
    command = [
        sys.executable,
        "-m",
        "assistant_framework.media.document_text",
        path,
        kind,
        str(limits.max_pages),
        str(limits.max_chars),
        str(memory),
    ]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
    if os.environ.get("PYTHONPATH"):  # a source tree run without installing
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=limits.timeout_seconds,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return took_longer(limits.timeout_seconds)
    except OSError as err:
        return DocumentRefused(f"the document reader could not start ({err.strerror or err})")
    try:
        answer = json.loads(done.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        answer = None
    if done.returncode != 0 or not isinstance(answer, dict):
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        if "MemoryError" in last[0]:
            return DocumentRefused(TOOK_MORE_MEMORY)
        return DocumentRefused(f"the document reader failed ({last[0][:200]})")
    return answer


def read_document(
    area: Workspace, rel: str, kind: str, limits: DocumentSettings, memory: int = READER_MEMORY_MOST
) -> DocumentText | DocumentRefused:
    """Read the saved document ``rel`` of ``area`` (in the worker, within ``memory`` bytes of address space) and
    save its text as ``rel + TEXT_SUFFIX`` (marked ``untrusted`` in its front matter); blocking."""
    path = area.path(rel)
    size = path.stat().st_size
    if size > limits.max_bytes:
        return DocumentRefused(
            f"it is {_size_text(size)} and I read documents of at most {_size_text(limits.max_bytes)}"
        )
    wrong = _not_the_format(path, kind, size)
    if wrong is not None:
        return wrong
    if kind in IN_THREAD_KINDS:
        answer: dict[str, object] | DocumentRefused = asdict(extract(path, kind, limits.max_pages, limits.max_chars))
    else:
        answer = _run_worker(str(path), kind, limits, memory)
    if isinstance(answer, DocumentRefused):
        return answer
    if answer.get("refused"):
        return DocumentRefused(str(answer["refused"]))
    text = str(answer.get("text") or "")
    pages, pages_read = int(str(answer.get("pages") or 0)), int(str(answer.get("pages_read") or 0))
    name = PurePosixPath(rel).name
    what = f"{pages_read} of {pages} pages" if pages_read < pages else f"{pages} pages" if pages else ""
    title = f"# Text of {name}" + (f" ({what})" if what else "") + "\n\n"
    text_rel = rel + TEXT_SUFFIX
    before = UNTRUSTED_FRONT_MATTER + title
    atomic_write_bytes(area.path(text_rel), (before + text + "\n").encode("utf-8"), private=True)
    head = text[: limits.prompt_chars]
    return DocumentText(
        text_path=text_rel,
        chars=len(text),
        pages=pages,
        pages_read=pages_read,
        cut=bool(answer.get("cut")),
        head=head,
        rest_offset=len(before) + len(head),
    )
