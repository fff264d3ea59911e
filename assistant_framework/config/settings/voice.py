"""The ``voice`` section: answering by voice (a speech endpoint, and when to use it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import nests, number, one_of, reads, text, whole
from assistant_framework.config.settings.readers import HTTP_URL

#: When a reply is also spoken: never, to answer a voice note, or every reply.
VOICE_REPLIES = ("off", "mirror", "always")


@dataclass(frozen=True)
class SpeechSettings:
    """``voice.tts``: an OpenAI-compatible ``/audio/speech`` endpoint (Kokoro-FastAPI, openedai-speech,
    LocalAI, OpenAI)."""

    base_url: str = field(default="", metadata=reads(text, pattern=HTTP_URL))
    model: str = field(default="", metadata=reads(text))
    voice: str = field(default="alloy", metadata=reads(text))
    api_key: str = field(default="", repr=False, metadata=reads(text))
    #: The environment variable holding the key, when ``api_key`` is empty.
    api_key_env: str = field(default="", metadata=reads(text))
    timeout_seconds: float = field(default=60.0, metadata=reads(number, above=0))

    @property
    def usable(self) -> bool:
        """True when replies can be spoken: base_url and model are set."""
        return bool(self.base_url) and bool(self.model)


@dataclass(frozen=True)
class VoiceSettings:
    """The ``voice`` section (docs/media.md)."""

    reply: str = field(default="off", metadata=reads(one_of(*VOICE_REPLIES)))
    tts: SpeechSettings = field(default_factory=SpeechSettings, metadata=nests(SpeechSettings))
    #: At most this many characters of a reply are spoken (in voice notes of up to ~1000 each); the text
    #: always goes in full.
    max_chars: int = field(default=3000, metadata=reads(whole, minimum=1))
