"""Documents sent in a chat are read (issue 44, docs/documents.md): their text saved beside the file, marked as
outside content, indexed for memory search, and its start put into the turn; bounded in size, pages,
characters and time; a PDF without a text layer says so."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from assistant_framework.config.settings import DocumentSettings
from assistant_framework.media.document_text import extract
from assistant_framework.media.documents import DocumentRefused, DocumentText, read_document
from assistant_framework.skills.loader import load_skill_folder
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.attachments import SavedFile
from messaging_llm_bot.conversation.images import FilesInput, files_input
from tests.documents_data import HERON, docx_bytes, odt_bytes, pdf_pages, pptx_bytes, scanned_pdf, xlsx_bytes
from tests.telegram_harness import OWNER, texts

FILE_SKILL = load_skill_folder(Path(__file__).resolve().parent.parent / "skills" / "file")


def memory_on(config: dict) -> None:
    config["memory"] = {"enabled": True, "extract_facts": False, "episodes": False, "profile": False}


@pytest.mark.subprocess  # the document reader's worker process
def test_a_30_page_pdf_goes_into_the_turn_and_memory_search_finds_page_27(fake, start_bot, chat_server, workspace):
    start_bot(config_patch=memory_on)
    chat_server.enqueue(
        json.dumps({"skill": "memory_search", "args": {"query": "purple heron nests"}}), '{"reply": "Found it."}'
    )
    fake.send_document(OWNER, "garden report.pdf", pdf_pages(), caption="read this", mime_type="application/pdf")
    fake.wait_for(lambda: any(t.startswith("Found it.") for t in texts(fake)), timeout=30)
    turn = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert "[Document text] 30 pages" in turn and "[page 1]\nPage 1 of the garden report." in turn
    assert HERON not in turn  # page 27 is past the start that goes into the turn...
    assert "more characters: read them with the file skill" in turn and "untrusted" in turn
    text_file = re.search(r"saved at (inbox/.+?\.text\.md)", turn).group(1)
    assert text_file.endswith("/garden report.pdf.text.md"), text_file
    saved = workspace.read_text(text_file)
    assert saved.startswith("---\nuntrusted: true\n---\n") and HERON in saved  # ...but saved, marked
    found = chat_server.chat_requests[1]["messages"][-1]["content"]
    assert HERON in found and text_file in found  # ...and memory search finds it at once,
    assert "[documents, " in found and "[outside content]" in found  # as outside content
    assert workspace.path("inbox").exists() and any(
        p.endswith("/garden report.pdf") for p in workspace.list("inbox/**/*")
    )


@pytest.mark.subprocess  # the document reader's worker process
def test_a_pdf_without_a_text_layer_says_so_in_one_sentence(fake, start_bot, chat_server, workspace):
    start_bot()
    fake.send_document(OWNER, "scan.pdf", scanned_pdf(), mime_type="application/pdf")
    (reply,) = fake.wait_for_messages(OWNER, 1, timeout=20)
    assert reply["text"].startswith("📄 I saved scan.pdf at inbox/") and "no text layer" in reply["text"]
    assert reply["text"].count(". ") == 0 and "\n" not in reply["text"]  # one sentence
    assert chat_server.chat_requests == []  # nothing for the model to read
    assert [p for p in workspace.list("inbox/**/*") if p.endswith("scan.pdf")]  # the file stays


def test_a_60_mb_file_is_refused_in_one_sentence(fake, start_bot, chat_server, workspace):
    start_bot()
    fake.send_document(OWNER, "huge.pdf", b"%PDF-1.4" + b"0" * 60_000_000, mime_type="application/pdf")
    (reply,) = fake.wait_for_messages(OWNER, 1, timeout=20)
    assert reply["text"].startswith("huge.pdf is 60.0 MB; I take at most 20 MB.") and "\n" not in reply["text"], reply[
        "text"
    ]
    assert chat_server.chat_requests == [] and workspace.list("inbox/**/*") == []


# -- in-process: the bounds, the formats, a guest ------------------------------------------------------------------


def _saved(workspace: Workspace, name: str, data: bytes, mime: str | None = None) -> SavedFile:
    rel = f"inbox/2026-12-02/{name}"
    workspace.path(rel).parent.mkdir(parents=True, exist_ok=True)
    workspace.path(rel).write_bytes(data)
    return SavedFile(rel_path=rel, size=len(data), kind="document", mime_type=mime, caption="")


@pytest.mark.subprocess  # the document reader's worker process
def test_a_document_over_the_size_bound_is_refused_before_it_is_read(workspace, bot_config):
    """Signal takes files up to 100 MB: the documents' own bound refuses a 60 MB one (a sparse file here)."""
    from assistant_framework.config.settings import Settings

    saved = _saved(workspace, "big.pdf", b"%PDF-1.4")
    with open(workspace.path(saved.rel_path), "r+b") as handle:
        handle.truncate(60_000_000)
    got = asyncio.run(files_input(workspace, [saved], Settings.from_config(bot_config)))
    assert got == (
        "📄 I saved big.pdf at inbox/2026-12-02/big.pdf, but I cannot read it: it is 60.0 MB and I read documents "
        "of at most 20.0 MB."
    )
    assert not workspace.exists(saved.rel_path + ".text.md")


@pytest.mark.subprocess  # the document reader's worker process
def test_the_worker_is_ended_at_the_time_bound(workspace):
    saved = _saved(workspace, "report.pdf", pdf_pages(pages=2, sentence_page=1))
    got = read_document(workspace, saved.rel_path, "pdf", DocumentSettings(timeout_seconds=0.001))
    assert got == DocumentRefused("reading it took longer than 0 seconds")
    assert not workspace.exists(saved.rel_path + ".text.md")


@pytest.mark.subprocess  # the document reader's worker process
def test_pages_and_characters_are_bounded(workspace, tmp_path):
    path = tmp_path / "long.pdf"
    path.write_bytes(pdf_pages(pages=6, sentence_page=5))
    first = extract(path, "pdf", max_pages=2, max_chars=100_000)
    assert (first.pages, first.pages_read) == (6, 2) and "[page 2]" in first.text and HERON not in first.text
    short = extract(path, "pdf", max_pages=10, max_chars=500)
    assert short.cut and len(short.text) <= 500
    saved = _saved(workspace, "long.pdf", path.read_bytes())
    read = read_document(workspace, saved.rel_path, "pdf", DocumentSettings(max_pages=2, prompt_chars=100))
    assert isinstance(read, DocumentText) and read.pages_read == 2 and len(read.head) == 100
    assert workspace.read_text(read.text_path).startswith(
        "---\nuntrusted: true\n---\n# Text of long.pdf (2 of 6 pages)"
    )


@pytest.mark.parametrize(
    ("name", "make", "kind"),
    [
        ("minutes.docx", docx_bytes, "docx"),
        ("budget.xlsx", xlsx_bytes, "xlsx"),
        ("plan.pptx", pptx_bytes, "pptx"),
        ("letter.odt", odt_bytes, "odf"),
        ("page.html", lambda s: f"<html><body><script>x()</script><p>{s}</p></body></html>".encode(), "html"),
        ("list.csv", lambda s: f"what,when\n{s},today\n".encode(), "text"),
        ("latin1.txt", lambda s: f"Grüße: {s}".encode("latin-1"), "text"),
    ],
)
def test_every_kind_of_document_gives_its_text(tmp_path, name, make, kind):
    path = tmp_path / name
    path.write_bytes(make("Anna brings the cake on Friday"))
    got = extract(path, kind, max_pages=10, max_chars=10_000)
    assert not got.refused and "Anna brings the cake on Friday" in got.text, got
    assert "x()" not in got.text


def test_a_broken_file_is_one_clause(tmp_path):
    path = tmp_path / "broken.docx"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    got = extract(path, "docx", max_pages=10, max_chars=10_000)
    assert got.refused.startswith("it is not a DOCX file I can read") and not got.text


@pytest.mark.subprocess  # the document reader's worker process
def test_the_rest_is_read_with_the_file_skill_and_marked(workspace, bot_config):
    from assistant_framework.config.settings import Settings
    from assistant_framework.skills.support import OUTSIDE_LABEL

    saved = _saved(workspace, "report.pdf", pdf_pages(), "application/pdf")
    got = asyncio.run(files_input(workspace, [saved], Settings.from_config(bot_config)))
    assert isinstance(got, FilesInput)
    turn = got.text
    call = json.loads(turn.split("read them with the file skill, ", 1)[1].rstrip("]"))
    rest = FILE_SKILL.run(workspace, call, None)
    assert rest.startswith(OUTSIDE_LABEL) and HERON in rest
    head = turn.split("characters:\n", 1)[1].split("\n[", 1)[0]
    assert rest.split("\n", 2)[2].startswith(workspace.read_text(call["path"])[call["offset"] :][:50])
    assert head[-20:] in workspace.read_text(call["path"])[: call["offset"]]


def test_an_unreadable_document_with_a_caption_goes_to_the_model_told_so(workspace, bot_config):
    """No worker process for a file that is plainly not a PDF; the caption is still answered."""
    from assistant_framework.config.settings import Settings

    saved = _saved(workspace, "menu.pdf", b"%PDF-1.4 only a header", "application/pdf")
    saved.caption = "what is on it?"
    got = asyncio.run(files_input(workspace, [saved], Settings.from_config(bot_config)))
    assert isinstance(got, FilesInput) and "Caption: what is on it?" in got.text
    assert got.text.endswith("Its text could not be read: it is not a PDF I can read (no PDF header or end).")


@pytest.mark.subprocess  # the document reader's worker process
def test_a_word_file_sent_on_signal_goes_into_the_turn(start, daemon, chat_server, workspace):
    """The same reading for every channel (conversation/images.py files_input): a DOCX on Signal."""
    from tests.signal_harness import OWNER as SIGNAL_OWNER

    start()
    chat_server.enqueue('{"reply": "Read it."}')
    minutes = daemon.add_attachment(
        docx_bytes("Anna brings the cake on Friday"),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        filename="minutes.docx",
    )
    daemon.message(SIGNAL_OWNER, "what do the minutes say?", attachments=[minutes])
    daemon.wait_sent(1, timeout=20)
    turn = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert "[Document text]" in turn and "Owner | Anna brings the cake on Friday" in turn and "untrusted" in turn
    assert any(p.endswith("minutes.docx.text.md") for p in workspace.list("inbox/**/*"))


def test_an_html_file_whose_last_tag_never_ends_is_read_at_once_on_signal(start, daemon, chat_server, workspace):
    """An HTML file read in the bot's own thread: its text, then 200 KB of a start tag that is never finished. The
    rest shows nothing and the turn goes on at once (Python 3.11's parser took minutes of the bot's CPU for it)."""
    from tests.signal_harness import OWNER as SIGNAL_OWNER

    start()
    chat_server.enqueue('{"reply": "Read it."}')
    page = daemon.add_attachment(
        b"<html><body><p>The heron nests by the lake.</p>" + b"<a" * 100_000, "text/html", filename="page.html"
    )
    daemon.message(SIGNAL_OWNER, "what does the page say?", attachments=[page])
    [sent] = daemon.wait_sent(1, timeout=10)
    assert sent["message"] == "Read it."
    turn = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert "[Document text] 28 characters" in turn and "The heron nests by the lake." in turn and "<a<a" not in turn


@pytest.mark.subprocess  # the document reader's worker process
def test_the_documents_of_one_message_share_one_time_bound_on_signal(start, daemon, chat_server, workspace):
    """Four PDFs in one Signal message with a time bound no reader meets: the first is ended at the bound and the
    three after it are not started, each named with the reason, so the message's documents take the bound once
    (each took it in turn before: a message of ten files that each take 60 s held its turn ten minutes)."""
    from tests.signal_harness import OWNER as SIGNAL_OWNER

    start(patch=lambda config: config.update(documents={"timeout_seconds": 0.05}))
    chat_server.enqueue('{"reply": "None could be read."}')
    files = [
        daemon.add_attachment(pdf_pages(pages=2, sentence_page=1), "application/pdf", filename=f"part-{n}.pdf")
        for n in range(1, 5)
    ]
    daemon.message(SIGNAL_OWNER, "what do they say?", attachments=files)
    [sent] = daemon.wait_sent(1, timeout=20)
    assert sent["message"] == "None could be read."
    turn = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert turn.count("Its text could not be read: reading it took longer than 0 seconds.") == 1
    assert turn.count("the documents before it took the 0 seconds I read a message's documents in") == 3
    assert not any(p.endswith(".text.md") for p in workspace.list("inbox/**/*"))


def test_the_documents_section_sets_the_bounds(workspace, bot_config):
    """``documents.prompt_chars`` and ``documents.max_mb`` as configured (config/README.md)."""
    from assistant_framework.config.settings import Settings

    text = _saved(workspace, "notes.txt", ("word " * 400).encode(), "text/plain")
    settings = Settings.from_config({**bot_config, "documents": {"prompt_chars": 50, "max_mb": 0.001}})
    got = asyncio.run(files_input(workspace, [text], settings))
    assert got == (
        "📄 I saved notes.txt at inbox/2026-12-02/notes.txt, but I cannot read it: it is 2 KB and I read "
        "documents of at most 1 KB."
    )
    settings = Settings.from_config({**bot_config, "documents": {"prompt_chars": 50}})
    got = asyncio.run(files_input(workspace, [text], settings))
    assert isinstance(got, FilesInput) and "The first 50 characters:" in got.text
