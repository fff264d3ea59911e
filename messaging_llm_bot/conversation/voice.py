"""Replies spoken as voice notes (Telegram, Signal; the terminal ignores voice): when a reply is spoken,
what of it is spoken, and the audio.

``voice.reply`` decides (``mirror``: a voice note is answered by voice; ``always``; ``off``), unless the
chat chose with ``/voice on|off``. The spoken text is the reply without Markdown and without code blocks,
without the footer of figures and the notices a frontend adds
(those stay in the text, which is always sent too), cut at ``voice.max_chars`` and split into parts of
about ``PART_CHARS``, one voice note each. Each part is spoken by the ``voice.tts`` endpoint
(llm/speech.py) as OGG/Opus, converted when the server sent another format
(assistant_framework/media/voice.py). Any failure is a value: the caller logs it once and the reply stays
text.
"""

from __future__ import annotations

import logging
import unicodedata
from dataclasses import dataclass

from assistant_framework.config.settings import VoiceSettings
from assistant_framework.media.voice import AudioError, is_ogg_opus, ogg_duration, to_ogg_opus
from messaging_llm_bot.agent.turn import without_footer
from messaging_llm_bot.conversation.chatflags import ChatFlags
from messaging_llm_bot.conversation.images import VISION_MISSING
from messaging_llm_bot.conversation.markup import markdown_entities, plain_parts
from messaging_llm_bot.llm.speech import speak

log = logging.getLogger(__name__)

#: The chat flag of ``/voice on|off`` (conversation/chatflags.py): True, False, or absent (``voice.reply``).
VOICE_FLAG = "voice"
#: One voice note speaks about this many characters (servers cap the input: OpenAI at 4096).
PART_CHARS = 1000
_SKIPPED = {"pre"}  # code blocks are read, not heard
_MARKERS = {"\u2981", "\u2022"}  # the list bullets the Markdown converter writes


@dataclass
class VoiceNote:
    """One spoken part: OGG/Opus bytes and its length in seconds (None when unknown)."""

    audio: bytes
    seconds: float | None


def wants_voice(voice: VoiceSettings, chat_choice: object, answered_voice_note: bool) -> bool:
    """Whether a reply is spoken: the chat's ``/voice`` choice, else ``voice.reply``; never without an endpoint."""
    if not voice.tts.usable:
        return False
    if isinstance(chat_choice, bool):
        return chat_choice
    return voice.reply == "always" or (voice.reply == "mirror" and answered_voice_note)


def spoken_parts(markdown: str, max_chars: int) -> list[str]:
    """The reply as speech: Markdown removed, code blocks and symbols (emoji, bullets) left out, at most
    ``max_chars`` characters, in parts of at most ``PART_CHARS``; empty when nothing is left to say."""
    converted = markdown_entities(markdown)
    text, entities = converted if converted is not None else (markdown, [])
    units = text.encode("utf-16-le", "surrogatepass")
    for entity in sorted(entities, key=lambda e: int(e.get("offset", 0)), reverse=True):
        if entity.get("type") in _SKIPPED:
            start, length = int(entity["offset"]), int(entity["length"])
            units = units[: 2 * start] + units[2 * (start + length) :]
    text = units.decode("utf-16-le", "surrogatepass")
    text = "".join(" " if ch in _MARKERS or unicodedata.category(ch) in ("So", "Sk", "Co", "Cs") else ch for ch in text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    paragraphs = ["\n".join(line for line in p.split("\n") if line) for p in "\n".join(lines).split("\n\n")]
    text = "\n\n".join(p for p in paragraphs if p)[:max_chars].strip()
    if not text:
        return []
    return [part.strip() for part in plain_parts(text, PART_CHARS) if part.strip()]


def speakable(reply: str) -> str:
    """What of a sent reply is spoken: the answer, not the notice a frontend added after it (a photo the model
    cannot see) nor the footer of figures (``runtime.reply_footer``)."""
    return without_footer(reply.removesuffix(f"\n\n{VISION_MISSING}"))


def voice_notes(voice: VoiceSettings, markdown: str) -> list[VoiceNote] | str:
    """The reply spoken as voice notes, or why not (one sentence for the log). Blocking: run it in a thread."""
    notes = []
    for part in spoken_parts(speakable(markdown), voice.max_chars):
        speech = speak(voice.tts, part)
        if speech.error is not None:
            return speech.error
        audio = speech.audio
        if not is_ogg_opus(audio):
            try:
                audio = to_ogg_opus(audio)
            except AudioError as err:
                return f"the speech server sent {speech.content_type or 'audio'} that is not OGG/Opus, and {err}"
        notes.append(VoiceNote(audio, ogg_duration(audio)))
    return notes


def voice_command(flags: ChatFlags, voice: VoiceSettings, conversation_id: str, argument: str) -> str:
    """The reply to ``/voice``, ``/voice on`` and ``/voice off`` in a chat."""
    choice = {"on": True, "off": False}.get(argument.strip().lower())
    if argument.strip() and choice is None:
        return "Use /voice on or /voice off (or /voice to see the setting)."
    if choice is not None:
        if choice and not voice.tts.usable:
            return "Voice replies need a speech server: set voice.tts.base_url and voice.tts.model (docs/media.md)."
        try:
            flags.set(conversation_id, VOICE_FLAG, choice)
        except OSError as err:
            return f"I could not save that choice: {err.strerror or err}."
        return "I'll answer here by voice too (the text comes as well)." if choice else "I'll answer here in text only."
    chosen = flags.get(conversation_id, VOICE_FLAG)
    if not voice.tts.usable:
        return "Voice replies are off: no speech server is set (voice.tts, docs/media.md)."
    if isinstance(chosen, bool):
        return f"Voice replies in this chat: {'on' if chosen else 'off'} (/voice on or /voice off changes it)."
    default = {"off": "off", "mirror": "when you send a voice note", "always": "on"}[voice.reply]
    return f"Voice replies in this chat: {default} (voice.reply); /voice on or /voice off changes it here."
