"""Documents, photos and voice notes end to end."""

from __future__ import annotations

import logging

from messaging_llm_bot.conversation.attachments import sanitize_name
from tests.telegram_harness import OWNER, texts


def test_document_is_saved_to_the_inbox_and_the_model_is_told(fake, start_bot, chat_server, workspace):
    start_bot()
    chat_server.enqueue('{"reply": "Got your report."}')
    fake.send_document(
        OWNER, "Q3 report:final.pdf", b"%PDF-1.4 fake", caption="please file this", mime_type="application/pdf"
    )
    fake.wait_for(lambda: "Got your report." in texts(fake))
    saved = workspace.list("inbox/**/*")
    assert len(saved) == 1 and saved[0].endswith("/Q3 report_final.pdf"), saved
    assert workspace.path(saved[0]).read_bytes() == b"%PDF-1.4 fake"
    prompt = chat_server.chat_requests[0]["messages"][-1]["content"]
    assert saved[0] in prompt and "please file this" in prompt and "untrusted" in prompt


def test_document_with_a_long_non_latin_name_is_saved(fake, start_bot, chat_server, workspace):
    """100 CJK characters are 300 bytes: over the 255-byte file name limit of ext4 and most file systems."""
    start_bot()
    chat_server.enqueue('{"reply": "Got your file."}')
    name = "日本語の長いファイル名" * 12 + ".pdf"
    # With a caption: a file whose text cannot be read goes to the model, told so (tests/test_documents.py).
    fake.send_document(OWNER, name, b"%PDF-1.4 fake", caption="keep")
    fake.send_document(OWNER, name, b"%PDF-1.4 second", caption="keep")  # the same name again: saved beside it
    chat_server.enqueue('{"reply": "Got the second."}')
    fake.wait_for(lambda: "Got the second." in texts(fake), timeout=15)
    assert texts(fake) == ["Got your file.", "Got the second."]
    saved = sorted(workspace.list("inbox/**/*"))
    assert len(saved) == 2 and all(s.split("/")[-1].startswith("日本語の長いファイル名") for s in saved), saved
    assert all(s.endswith(".pdf") and len(s.split("/")[-1].encode()) <= 210 for s in saved), saved
    assert {workspace.path(s).read_bytes() for s in saved} == {b"%PDF-1.4 fake", b"%PDF-1.4 second"}


def test_photo_saves_the_largest_size(fake, start_bot, chat_server, workspace):
    start_bot()
    fake.send_photo(OWNER, b"J" * 4000, caption="my cat")
    fake.wait_for_messages(OWNER, 1)
    saved = workspace.list("inbox/**/*.jpg")
    assert len(saved) == 1 and workspace.path(saved[0]).stat().st_size == 4000


def test_voice_note_is_transcribed_then_answered(fake, start_bot, chat_server):
    def with_transcription(config):
        config["llm"]["transcription"] = {"base_url": chat_server.base_url, "model": "whisper-1"}

    start_bot(config_patch=with_transcription)
    chat_server.set_transcription("remind me to buy bread")
    chat_server.enqueue('{"reply": "Noted."}')  # the honesty check may append a note
    fake.send_voice(OWNER, b"OggS fake opus")
    fake.wait_for(lambda: len(texts(fake)) == 2 and texts(fake)[1].startswith("Noted."))
    assert texts(fake)[0] == "🎙 remind me to buy bread"
    upload = [r for r in chat_server.requests if r.path.endswith("/audio/transcriptions")][0]
    assert upload["model"] == "whisper-1" and upload["file_size"] == len(b"OggS fake opus")
    assert chat_server.chat_requests[0]["messages"][-1]["content"].startswith("remind me to buy bread")


def test_a_transcript_telegram_refuses_to_show_is_logged_and_the_note_still_answered(
    fake, start_bot, chat_server, caplog
):
    """Showing the transcript is a courtesy (conversation/turn.py's ``read``, for every channel that shows it):
    refused, it is logged and the note is answered all the same."""

    def with_transcription(config):
        config["llm"]["transcription"] = {"base_url": chat_server.base_url, "model": "whisper-1"}

    start_bot(config_patch=with_transcription, progress=False)
    chat_server.set_transcription("remind me to buy bread")
    chat_server.enqueue('{"reply": "Noted."}')
    fake.fail_next("sendMessage", status=400, description="Bad Request: not enough rights to send text messages")
    with caplog.at_level(logging.WARNING, logger="messaging_llm_bot"):
        fake.send_voice(OWNER, b"OggS fake opus")
        fake.wait_for(lambda: any(text.startswith("Noted.") for text in texts(fake)))
    assert [text[:6] for text in texts(fake)] == ["Noted."]
    [line] = [r.getMessage() for r in caplog.records if "could not show the transcript" in r.getMessage()]
    assert "not enough rights" in line.lower()


def test_long_voice_note_transcript_is_echoed_in_parts_and_answered(fake, start_bot, chat_server):
    """A voice note of several minutes: its transcript is longer than one message (4096 units)."""

    def with_transcription(config):
        config["llm"]["transcription"] = {"base_url": chat_server.base_url, "model": "whisper-1"}

    start_bot(config_patch=with_transcription)
    spoken = " ".join(f"sentence {i} of a long voice note about the garden." for i in range(120))
    assert len(spoken) > 5000
    chat_server.set_transcription(spoken)
    chat_server.enqueue('{"reply": "Got the whole note."}')
    fake.send_voice(OWNER, b"OggS fake opus")
    fake.wait_for(lambda: any(t.startswith("Got the whole note.") for t in texts(fake)), timeout=20)
    shown = texts(fake)
    assert shown[0].startswith("🎙 sentence 0 ") and len(shown) == 3, shown
    assert " ".join(shown[:2]).split() == ["🎙", *spoken.split()]  # the whole transcript, nothing cut
    assert chat_server.chat_requests[0]["messages"][-1]["content"].startswith(spoken)


def test_voice_without_transcription_and_stickers_get_a_not_supported_reply(fake, start_bot, chat_server):
    start_bot()
    fake.send_voice(OWNER, b"OggS")
    fake.push_update(
        {
            "message": {
                "message_id": 99,
                "date": 1,
                "chat": {"id": OWNER, "type": "private"},
                "from": {"id": OWNER, "is_bot": False, "first_name": "O"},
                "sticker": {
                    "file_id": "S1",
                    "file_unique_id": "SU1",
                    "type": "regular",
                    "width": 1,
                    "height": 1,
                    "is_animated": False,
                    "is_video": False,
                },
            }
        }
    )
    msgs = fake.wait_for_messages(OWNER, 2)
    assert "llm.transcription" in msgs[0]["text"]
    assert "can't handle a sticker" in msgs[1]["text"]
    assert chat_server.requests == []


def test_sanitize_name_keeps_files_inside_the_folder():
    assert sanitize_name("../../etc/passwd") == "passwd"
    assert sanitize_name("..\\..\\boot.ini") == "boot.ini"
    assert sanitize_name("Q3 report?.pdf") == "Q3 report_.pdf"
    assert sanitize_name("...") == "file"
    assert len(sanitize_name("x" * 300 + ".txt")) <= 100
