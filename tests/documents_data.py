"""Test documents made at test time (fpdf2, python-docx, openpyxl, python-pptx, a zip): small, each holding a
known sentence where the test says."""

from __future__ import annotations

import functools
import io
import zipfile

HERON = "The purple heron nests behind the old mill."


@functools.cache  # bytes: the same file for every test that asks for it, laid out once (0.1-0.3 s of CPU each)
def pdf_pages(pages: int = 30, sentence_page: int = 27, sentence: str = HERON) -> bytes:
    """A PDF with a text layer: ``pages`` pages of filler, ``sentence`` on page ``sentence_page``."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for number in range(1, pages + 1):
        pdf.add_page()
        pdf.multi_cell(
            0,
            6,
            f"Page {number} of the garden report. " + "Tomatoes need sun and water. " * 12,
            new_x="LMARGIN",
            new_y="NEXT",
        )
        if number == sentence_page:
            pdf.multi_cell(0, 6, sentence, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def scanned_pdf() -> bytes:
    """A PDF whose one page is a picture (as a scanner makes it): no text layer."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (400, 120), "white")
    ImageDraw.Draw(picture).text((10, 50), "INVOICE 2026-117", fill="black")
    data = io.BytesIO()
    picture.save(data, "PNG")
    pdf = FPDF()
    pdf.add_page()
    pdf.image(data, x=10, y=10, w=150)
    return bytes(pdf.output())


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


@functools.cache
def crowded_docx(paragraphs: int = 500_000) -> bytes:
    """A Word file of 86 KB whose ``paragraphs`` one-letter paragraphs python-docx parses into one tree: 500,000
    need about 300 MiB of address space to read (measured), a usual document 40 MiB."""
    base = zipfile.ZipFile(io.BytesIO(docx_bytes("Minutes.")))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in base.infolist():
            data = base.read(item.filename)
            if item.filename == "word/document.xml":
                head, tail = data.split(b"<w:body>", 1)
                data = head + b"<w:body>" + b"<w:p><w:r><w:t>x</w:t></w:r></w:p>" * paragraphs + tail
            archive.writestr(item, data, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()
