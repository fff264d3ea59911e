"""A document's text, format by format: what runs inside the conversion worker (``documents.py`` starts it).

PDF with ``pypdf``, Word with ``python-docx``, Excel with ``openpyxl``, PowerPoint with ``python-pptx``,
OpenDocument (ODT, ODS, ODP) from its ``content.xml`` with the stdlib, HTML with ``html_text``, CSV and
plain text decoded as they are. Each reader stops at ``max_chars`` characters and a PDF at ``max_pages``
pages, so a huge file costs no more than the bound. Run as ``python -m assistant_framework.media.document_text
PATH KIND MAX_PAGES MAX_CHARS MEMORY_BYTES``: it bounds its own address space to ``MEMORY_BYTES`` first (what
``reader_memory`` gives this machine), then prints one JSON object (``Extracted``) on stdout.
"""

from __future__ import annotations

import codecs
import json
import sys
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from xml.etree import ElementTree

#: What a file's suffix says it is (the type a chat app sends is often ``application/octet-stream``).
KIND_BY_SUFFIX = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".pptx": "pptx",
    ".odt": "odf",
    ".ods": "odf",
    ".odp": "odf",
    ".html": "html",
    ".htm": "html",
    ".csv": "text",
    ".tsv": "text",
    ".txt": "text",
    ".md": "text",
    ".markdown": "text",
    ".json": "text",
}
KIND_BY_TYPE = {
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.oasis.opendocument.text": "odf",
    "application/vnd.oasis.opendocument.spreadsheet": "odf",
    "application/vnd.oasis.opendocument.presentation": "odf",
    "text/html": "html",
    "text/csv": "text",
    "text/plain": "text",
    "text/markdown": "text",
}


#: Why a document was not read: its reader reached the memory bound (also said for a worker that died of it).
TOOK_MORE_MEMORY = "reading it took more memory than a document may"


@dataclass
class Extracted:
    """What a reader got: the text (at most ``max_chars``), the pages (a PDF's; 0 for other kinds) read and
    in the file, whether the text was cut at ``max_chars``, and a refusal (one sentence) instead."""

    text: str = ""
    pages_read: int = 0
    pages: int = 0
    cut: bool = False
    refused: str = ""


class _Collector:
    """Text parts joined up to ``max_chars``; ``full`` once the bound is reached (the readers stop then)."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.parts: list[str] = []
        self.size = 0
        self.full = False

    def add(self, text: str) -> None:
        if self.full or not text:
            return
        room = self.max_chars - self.size
        if len(text) > room:
            text, self.full = text[:room], True
        self.parts.append(text)
        self.size += len(text)

    def extracted(self, pages: int = 0, pages_read: int = 0) -> Extracted:
        return Extracted(text="".join(self.parts).strip(), cut=self.full, pages=pages, pages_read=pages_read)


def _pdf(path: Path, max_pages: int, out: _Collector) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            return Extracted(refused="it is password-protected")
        pages = len(reader.pages)
        read = 0
        for number in range(min(pages, max_pages)):
            if out.full:
                break
            out.add(f"\n\n[page {number + 1}]\n{reader.pages[number].extract_text() or ''}".rstrip())
            read = number + 1
    except (PdfReadError, ValueError, KeyError, TypeError) as err:
        return Extracted(refused=f"it is not a PDF I can read ({type(err).__name__})")
    body = "".join(out.parts)
    if not any(line.strip() and not line.startswith("[page ") for line in body.splitlines()):
        return Extracted(pages=pages, pages_read=read, refused="it has no text layer (a scan or photos of pages?)")
    return out.extracted(pages=pages, pages_read=read)


def _docx(path: Path, out: _Collector) -> Extracted:
    import docx

    document = docx.Document(str(path))
    body = document.element.body
    for child in body.iterchildren():
        if out.full:
            break
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            out.add("".join(child.itertext()) + "\n")
        elif tag == "tbl":
            for row in child.iter("{*}tr"):
                cells = ["".join(cell.itertext()).strip() for cell in row.iter("{*}tc")]
                out.add(" | ".join(cells) + "\n")
    return out.extracted()


def _xlsx(path: Path, out: _Collector) -> Extracted:
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        for sheet in book.worksheets:
            out.add(f"\n## {sheet.title}\n")
            for row in sheet.iter_rows(values_only=True):
                if out.full:
                    break
                if any(value is not None for value in row):
                    out.add(" | ".join("" if value is None else str(value) for value in row).rstrip(" |") + "\n")
    finally:
        book.close()
    return out.extracted()


def _pptx(path: Path, out: _Collector) -> Extracted:
    import pptx

    deck = pptx.Presentation(str(path))
    for number, slide in enumerate(deck.slides, 1):
        if out.full:
            break
        out.add(f"\n\n[slide {number}]\n")
        for shape in slide.shapes:
            if shape.has_text_frame:
                out.add(shape.text_frame.text + "\n")
    return out.extracted()


def _odf(path: Path, out: _Collector) -> Extracted:
    with zipfile.ZipFile(path) as archive, archive.open("content.xml") as content:
        for _, element in ElementTree.iterparse(content):
            if out.full:
                break
            tag = element.tag.rsplit("}", 1)[-1]
            if tag in ("p", "h"):
                out.add("".join(element.itertext()) + "\n")
                element.clear()
    return out.extracted()


def _decoded(path: Path, max_bytes: int) -> str:
    """The first ``max_bytes`` of the file as text: UTF-8 (a character cut at the end left out), else the
    encoding chardet guesses."""
    with path.open("rb") as handle:
        raw = handle.read(max_bytes)
    try:
        return codecs.getincrementaldecoder("utf-8-sig")().decode(raw, final=False)
    except UnicodeDecodeError:
        import chardet

        guess = chardet.detect(raw[:200_000]).get("encoding") or "latin-1"
        return raw.decode(guess, errors="replace")


def _html(path: Path, out: _Collector) -> Extracted:
    from assistant_framework.html_text import html_to_text

    # Markup takes room: up to 8 bytes of the page for each character kept.
    out.add(html_to_text(_decoded(path, out.max_chars * 8)))
    return out.extracted()


def _text(path: Path, out: _Collector) -> Extracted:
    # At most 4 bytes a character in UTF-8: more could not add a character within the bound.
    out.add(_decoded(path, out.max_chars * 4 + 4))
    return out.extracted()


def _out_of_memory(err: Exception) -> bool:
    """True for an XML parser's error that is an allocation refused at the memory bound, not a broken file:
    libxml2's (lxml: python-docx, python-pptx, openpyxl) ``ERR_NO_MEMORY``, expat's (the stdlib: OpenDocument)
    ``XML_ERROR_NO_MEMORY``."""
    if isinstance(err, ElementTree.ParseError):
        return err.code == 1  # pyexpat.errors.codes[XML_ERROR_NO_MEMORY]
    return any(getattr(entry, "type_name", "") == "ERR_NO_MEMORY" for entry in getattr(err, "error_log", ()))


def extract(path: Path, kind: str, max_pages: int, max_chars: int) -> Extracted:
    """The text of the file at ``path`` read as ``kind`` (a value of ``KIND_BY_SUFFIX``), within the bounds."""
    out = _Collector(max_chars)
    readers: dict[str, Callable[[], Extracted]] = {
        "pdf": lambda: _pdf(path, max_pages, out),
        "docx": lambda: _docx(path, out),
        "xlsx": lambda: _xlsx(path, out),
        "pptx": lambda: _pptx(path, out),
        "odf": lambda: _odf(path, out),
        "html": lambda: _html(path, out),
        "text": lambda: _text(path, out),
    }
    try:
        found = readers[kind]()
    except MemoryError:
        return Extracted(refused=TOOK_MORE_MEMORY)
    except Exception as err:  # noqa: BLE001 - each library has its own errors for a broken file; all are one clause
        if _out_of_memory(err):
            return Extracted(refused=TOOK_MORE_MEMORY)
        return Extracted(refused=f"it is not a {kind.upper()} file I can read ({type(err).__name__})")
    if not found.refused and not found.text:
        found.refused = "it holds no text"
    return found


def _bound_memory(limit: int) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this system: the time bound still holds
        pass


def main(argv: list[str]) -> int:
    """The worker: ``PATH KIND MAX_PAGES MAX_CHARS MEMORY_BYTES`` in, one JSON object out."""
    _bound_memory(int(argv[4]))
    path, kind, max_pages, max_chars = argv[0], argv[1], int(argv[2]), int(argv[3])
    found = extract(Path(path), kind, max_pages, max_chars)
    sys.stdout.write(json.dumps(asdict(found), ensure_ascii=False))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover - run by documents.convert in its own process
    raise SystemExit(main(sys.argv[1:]))
