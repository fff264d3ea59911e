"""Voice replies: a voice note answered with a voice note (Telegram sendVoice, Signal an attachment) made by an
OpenAI-compatible speech endpoint (the fake in tests/fakes/chat_server.py), and the text reply whenever the
speech cannot be made."""

from __future__ import annotations

import logging

import pytest

from messaging_llm_bot.conversation.images import VISION_MISSING
from messaging_llm_bot.conversation.voice import PART_CHARS, spoken_parts
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.speech_audio import encoded
from tests.media_files import jpeg_with_gps, ogg_opus_seconds
from tests.telegram_harness import OWNER, texts
from tests.waiting import wait_until

REPLY = "Bread is on your list."


def speech_requests(server: FakeChatServer) -> list[dict]:
    return [r for r in server.requests if r.path == "/v1/audio/speech"]


def voice_config(chat_server: FakeChatServer, reply: str = "mirror", tts_url: str | None = None, footer: bool = False):
    """A config patch: transcription and speech at ``chat_server`` (speech elsewhere with ``tts_url``)."""

    def patch(config):
        config["runtime"]["reply_footer"] = footer
        config["llm"]["transcription"] = {"base_url": chat_server.base_url, "model": "whisper-1"}
        config["voice"] = {
            "reply": reply,
            "tts": {"base_url": tts_url or chat_server.base_url, "model": "kokoro", "voice": "af_heart"},
        }

    return patch


def sent_voices(fake) -> list[bytes]:
    return [call["params"]["voice"]["content"] for call in fake.calls("sendVoice")]


def test_telegram_voice_note_is_answered_with_a_playable_voice_note_and_the_text(fake, start_bot, chat_server):
    start_bot(config_patch=voice_config(chat_server))
    chat_server.set_transcription("what do I need to buy")
    chat_server.enqueue(f'{{"reply": "{REPLY}"}}')
    fake.send_voice(OWNER, encoded("opus", 0.5))
    fake.wait_for(lambda: fake.calls("sendVoice"))
    assert REPLY in texts(fake)  # the text goes too, first
    [request] = speech_requests(chat_server)
    assert request["input"] == REPLY and request["response_format"] == "opus" and request["voice"] == "af_heart"
    [audio] = sent_voices(fake)
    # A valid OGG/Opus stream, the one the speech server made for this text (0.05 s a character).
    assert ogg_opus_seconds(audio) == pytest.approx(0.05 * len(REPLY), abs=0.05)
    call = fake.calls("sendVoice")[0]
    assert call["params"]["voice"]["filename"].endswith(".ogg") and call["params"]["duration"] == 2

    chat_server.enqueue('{"reply": "Text for text."}')
    fake.send_message("and in text?")
    fake.wait_for(lambda: "Text for text." in texts(fake))
    assert len(fake.calls("sendVoice")) == 1 and len(speech_requests(chat_server)) == 1  # mirror: text stays text


@pytest.mark.parametrize(
    "speech",
    [
        pytest.param("down", id="server-down"),
        pytest.param({"status": 500}, id="http-500"),
        pytest.param({"raw": b"\x00\x01 not audio", "content_type": "audio/opus"}, id="garbage"),
    ],
)
def test_telegram_text_reply_arrives_when_the_speech_cannot_be_made(fake, start_bot, chat_server, caplog, speech):
    with FakeChatServer() as gone:
        tts_url = gone.base_url
    if speech == "down":
        patch = voice_config(chat_server, tts_url=tts_url)  # nothing listens there any more
    else:
        chat_server.set_speech(speech)
        patch = voice_config(chat_server)
    start_bot(config_patch=patch)
    chat_server.set_transcription("what do I need to buy")
    chat_server.enqueue(f'{{"reply": "{REPLY}"}}')
    with caplog.at_level(logging.WARNING, logger="messaging_llm_bot.channels.telegram.turn"):
        fake.send_voice(OWNER, encoded("opus", 0.5))
        fake.wait_for(lambda: REPLY in texts(fake))
        wait_until(lambda: any("stays text only" in r.getMessage() for r in caplog.records), what="the log line")
    assert fake.calls("sendVoice") == []
    assert [r for r in caplog.records if "stays text only" in r.getMessage()].__len__() == 1  # one log line


def test_a_speech_server_without_opus_is_converted_to_ogg_opus(fake, start_bot, chat_server):
    """Some servers (Piper front ends) answer WAV whatever was asked: PyAV makes it OGG/Opus."""
    chat_server.set_speech({"format": "wav"})
    start_bot(config_patch=voice_config(chat_server, reply="always"))
    chat_server.enqueue(f'{{"reply": "{REPLY}"}}')
    fake.send_message("shopping?")
    fake.wait_for(lambda: fake.calls("sendVoice"))
    [audio] = sent_voices(fake)
    assert ogg_opus_seconds(audio) == pytest.approx(0.05 * len(REPLY), abs=0.05)


def test_voice_on_and_off_per_chat_and_code_is_never_spoken(fake, start_bot, chat_server, workspace):
    start_bot(config_patch=voice_config(chat_server, reply="off"))
    fake.send_message("/voice on")
    fake.wait_for(lambda: any("answer here by voice" in t for t in texts(fake)))
    chat_server.enqueue('{"reply": "Run this:\\n\\n```\\nrm -rf build\\n```\\n\\nThen **build** again."}')
    fake.send_message("how do I rebuild?")
    fake.wait_for(lambda: fake.calls("sendVoice"))
    [request] = speech_requests(chat_server)
    assert request["input"] == "Run this:\n\nThen build again."  # no code, no Markdown
    assert any("rm -rf build" in t for t in texts(fake))  # the code stays in the text
    fake.send_message("/voice off")
    fake.wait_for(lambda: any("text only" in t for t in texts(fake)))
    chat_server.enqueue('{"reply": "Quiet now."}')
    fake.send_message("and now?")
    fake.wait_for(lambda: "Quiet now." in texts(fake))
    assert len(fake.calls("sendVoice")) == 1


def test_the_footer_and_the_no_vision_notice_are_shown_not_spoken(fake, start_bot, chat_server):
    """The figures under a reply (runtime.reply_footer) and the "I cannot see images" notice are for the eye:
    the text shows them, the voice note says the answer only."""
    start_bot(config_patch=voice_config(chat_server, reply="always", footer=True))
    chat_server.enqueue(f'{{"reply": "{REPLY}"}}')
    fake.send_photo(OWNER, jpeg_with_gps(300, 200), caption="what is this?")  # no runner here takes images
    fake.wait_for(lambda: fake.calls("sendVoice"))
    [shown] = [t for t in texts(fake) if t.startswith(REPLY)]
    assert "round" in shown and VISION_MISSING.split(":")[0] in shown  # the text has both
    [request] = speech_requests(chat_server)
    assert request["input"] == REPLY


def test_signal_speaks_the_answer_without_the_footer(start, daemon, chat_server):
    from tests.signal_harness import OWNER as SIGNAL_OWNER

    note = daemon.add_attachment(encoded("opus", 0.5), "audio/aac")
    chat_server.set_transcription("what do I need to buy")
    chat_server.enqueue(f'{{"reply": "{REPLY}"}}')
    start(patch=voice_config(chat_server, footer=True))
    daemon.message(SIGNAL_OWNER, None, attachments=[note])
    sent = daemon.wait_sent(3)  # the transcript, the text reply, the voice reply
    assert sent[1]["message"].startswith(REPLY) and "round" in sent[1]["message"]
    [request] = speech_requests(chat_server)
    assert request["input"] == REPLY


def test_signal_voice_note_is_answered_with_an_ogg_opus_attachment(start, daemon, chat_server):
    from tests.signal_harness import OWNER as SIGNAL_OWNER

    note = daemon.add_attachment(encoded("opus", 0.5), "audio/aac")
    chat_server.set_transcription("what do I need to buy")
    chat_server.enqueue(f'{{"reply": "{REPLY}"}}')
    start(patch=voice_config(chat_server))
    daemon.message(SIGNAL_OWNER, None, attachments=[note])
    sent = daemon.wait_sent(3)  # the transcript, the text reply, the voice reply
    assert sent[1]["message"] == REPLY
    [voice] = sent[2]["files"]
    assert voice["mime_type"] == "audio/ogg" and voice["filename"].endswith(".ogg") and not sent[2]["message"]
    assert ogg_opus_seconds(voice["content"]) == pytest.approx(0.05 * len(REPLY), abs=0.05)


def test_a_long_reply_is_spoken_in_parts_within_the_bound():
    reply = " ".join(f"Sentence number {i} of a long answer." for i in range(200))
    parts = spoken_parts(reply, 2500)
    assert len(parts) == 3 and all(len(p) <= PART_CHARS for p in parts)
    assert " ".join(parts).split() == reply[:2500].split()
    assert spoken_parts("```\nonly code\n```", 3000) == []  # nothing to say: no voice note


def test_signal_text_reply_arrives_when_the_speech_server_is_down(start, daemon, chat_server, caplog):
    from tests.signal_harness import OWNER as SIGNAL_OWNER

    with FakeChatServer() as gone:
        tts_url = gone.base_url
    note = daemon.add_attachment(encoded("opus", 0.5), "audio/aac")
    chat_server.set_transcription("what do I need to buy")
    chat_server.enqueue(f'{{"reply": "{REPLY}"}}')
    with caplog.at_level(logging.WARNING, logger="messaging_llm_bot.channels.signal.turn"):
        start(patch=voice_config(chat_server, tts_url=tts_url))
        daemon.message(SIGNAL_OWNER, None, attachments=[note])
        sent = daemon.wait_sent(2)  # the transcript and the text reply
        wait_until(lambda: any("stays text only" in r.getMessage() for r in caplog.records), what="the log line")
    assert sent[1]["message"] == REPLY and all(not s["files"] for s in daemon.sent)


def test_a_redirect_from_the_speech_servers_is_not_followed(fake, start_bot, chat_server, caplog):
    """Transcription and speech servers that answer 307 to another address: requests dropped the key but sent the
    voice note's audio and the reply's text there again, and used that server's transcript and audio. Now
    nothing reaches the other server: the user is told where the transcription pointed, and the reply stays text
    (as llm/client.py's chat calls, llm/errors.py: redirect_detail)."""
    with FakeChatServer() as elsewhere:
        heard, spoken = f"{elsewhere.base_url}/audio/transcriptions", f"{elsewhere.base_url}/audio/speech"
        elsewhere.set_transcription("the other server's words")
        chat_server.set_transcription({"status": 307, "headers": {"Location": heard}})
        chat_server.set_speech({"status": 307, "headers": {"Location": spoken}})
        start_bot(config_patch=voice_config(chat_server, reply="always"))
        fake.send_voice(OWNER, encoded("opus", 0.5))
        fake.wait_for(lambda: texts(fake))
        [told] = texts(fake)
        assert f"redirects to {heard}, which is not followed" in told and len(told) < 400, told
        chat_server.enqueue(f'{{"reply": "{REPLY}"}}')
        with caplog.at_level(logging.WARNING, logger="messaging_llm_bot.conversation.turn"):
            fake.send_message("shopping?")
            fake.wait_for(lambda: REPLY in texts(fake))
            wait_until(lambda: any("stays text only" in r.getMessage() for r in caplog.records), what="the log")
        assert [r for r in caplog.records if f"redirects to {spoken}, which is not followed" in r.getMessage()]
        assert elsewhere.requests == [] and fake.calls("sendVoice") == []
