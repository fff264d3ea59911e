"""Speech-to-text through an OpenAI-compatible ``POST {base_url}/audio/transcriptions`` endpoint."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant_framework.config.settings import LLMSettings, TranscriptionSettings

if TYPE_CHECKING:  # pragma: no cover
    import requests

#: A transcript answer larger than this is refused (hours of speech are far less).
MAX_ANSWER_BYTES = 4 * 1024 * 1024


@functools.cache
def _session() -> requests.Session:
    """One pooled session for transcriptions whose requests obey the call's whole deadline."""
    from assistant_framework.http_deadline import deadline_session

    return deadline_session()


@dataclass
class Transcription:
    """Result of one transcription: the text, or an error message naming what failed."""

    text: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when a non-empty transcript came back."""
        return self.error is None and bool(self.text.strip())


def transcription_settings(llm: LLMSettings) -> TranscriptionSettings | None:
    """The ``llm.transcription`` record when it is usable (enabled, base_url and model set), else None."""
    return llm.transcription if llm.transcription.usable else None


def transcribe(
    settings: TranscriptionSettings,
    audio: bytes,
    file_name: str = "voice.ogg",
    content_type: str = "audio/ogg",
    session: requests.Session | None = None,
) -> Transcription:
    """Send ``audio`` as multipart (file, model) and return the transcript; errors are values."""
    # On use: the Telegram frontend imports this module before its first poll.
    import requests

    from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request
    from messaging_llm_bot.llm.errors import redirect_detail

    url = settings.base_url.rstrip("/") + "/audio/transcriptions"
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    timeout = settings.timeout_seconds
    form = {"model": settings.model, "response_format": "json"}
    if settings.language:
        form["language"] = settings.language
    try:
        # ``timeout_seconds`` bounds the whole exchange: a server trickling its answer ends there too.
        resp = bounded_request(
            session or _session(),
            "POST",
            url,
            seconds=timeout,
            max_bytes=MAX_ANSWER_BYTES,
            headers=headers,
            data=form,
            files={"file": (file_name, audio, content_type)},
            allow_redirects=False,  # the audio goes to base_url only, as the chat's prompt does
        )
    except DeadlineExceeded:
        return Transcription(error=f"transcription at {url} did not finish within {timeout:g} s")
    except BodyTooLarge:
        return Transcription(error=f"transcription at {url} answered more than {MAX_ANSWER_BYTES // 1024} KB")
    except (requests.RequestException, OSError) as err:
        # The URL is safe to name; headers (the key) never appear in the message.
        return Transcription(error=f"transcription request to {url} failed: {type(err).__name__}")
    if 300 <= resp.status < 400:
        return Transcription(error=f"transcription at {url}: {redirect_detail(resp.headers)}")
    if resp.status != 200:
        return Transcription(error=f"transcription at {url} answered HTTP {resp.status}: {resp.text[:200]}")
    try:
        body = resp.json()
    except ValueError:
        return Transcription(text=resp.text.strip())  # some servers answer plain text regardless
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str):
        return Transcription(error=f"transcription at {url} returned no 'text' field")
    return Transcription(text=text.strip())
