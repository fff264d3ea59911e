"""Test documents made at test time (PDFs by hand, python-docx, openpyxl, python-pptx, a zip): small, each holding a
known sentence where the test says."""

from __future__ import annotations

import functools
import io
import textwrap
import zipfile
import zlib

HERON = "The purple heron nests behind the old mill."


@functools.cache  # bytes: the same file for every test that asks for it, laid out once
def pdf_pages(pages: int = 30, sentence_page: int = 27, sentence: str = HERON) -> bytes:
    """A PDF with a text layer: ``pages`` pages of filler, ``sentence`` on page ``sentence_page``."""
    texts = []
    for number in range(1, pages + 1):
        lines = textwrap.wrap(f"Page {number} of the garden report. " + "Tomatoes need sun and water. " * 12, 90)
        if number == sentence_page:
            lines.append(sentence)
        texts.append(_text_page(lines))
    return _pdf([(content, b"") for content in texts])


def scanned_pdf() -> bytes:
    """A PDF whose one page is a picture (as a scanner makes it): no text layer."""
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (400, 120), "white")
    ImageDraw.Draw(picture).text((10, 50), "INVOICE 2026-117", fill="black")
    image = (
        (
            b"<< /Type /XObject /Subtype /Image /Width 400 /Height 120 /ColorSpace /DeviceRGB /BitsPerComponent 8"
            b" /Filter /FlateDecode /Length %d >>\nstream\n" % len(packed := zlib.compress(picture.tobytes()))
        )
        + packed
        + b"\nendstream"
    )
    return _pdf([(b"q 425 0 0 128 28 680 cm /Im1 Do Q", image)])


# Written by hand rather than with fpdf2: importing fpdf2 (its fonts, its image and SVG parsers, cryptography for
# signing) took about 1 s of CPU per test process, more than the tests that read the PDFs. pypdf reads these as it
# reads any PDF: a catalog, a page tree, pages with a content stream in the standard Helvetica font.
def _text_page(lines: list[str]) -> bytes:
    """A page's content stream: ``lines`` top to bottom, 11 pt Helvetica, 14 pt apart."""
    shown = b" T* ".join(
        b"(%s) Tj" % line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        for line in lines
    )
    return b"BT /F1 11 Tf 14 TL 28 800 Td " + shown + b" ET"


def _pdf(pages: list[tuple[bytes, bytes]]) -> bytes:
    """A PDF of ``pages``, each a content stream and an image object (empty: none, the page shows text in F1)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for content, image in pages:
        first = len(objects) + 1
        if image:
            objects.append(image)
            resources = b"<< /XObject << /Im1 %d 0 R >> >>" % first
        else:
            resources = b"<< /Font << /F1 3 0 R >> >>"
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources %s /Contents %d 0 R >>"
            % (resources, len(objects))
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def docx_bytes(sentence: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Minutes", level=1)
    document.add_paragraph("First item.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Owner", sentence
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_bytes(sentence: str) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["item", "cost"])
    sheet.append([sentence, 12.5])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def pptx_bytes(sentence: str) -> bytes:
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Plan"
    slide.placeholders[1].text = sentence
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def odt_bytes(sentence: str) -> bytes:
    """A minimal OpenDocument text: the mimetype first, uncompressed, and content.xml."""
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        "<office:body><office:text><text:h>Letter</text:h>"
        f"<text:p>Dear Anna, <text:span>{sentence}</text:span></text:p>"
        "</office:text></office:body></office:document-content>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()
