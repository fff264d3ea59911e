"""Text-to-speech through an OpenAI-compatible ``POST {base_url}/audio/speech`` endpoint (Kokoro-FastAPI,
openedai-speech, LocalAI, OpenAI): ``{"model", "input", "voice", "response_format": "opus"}`` in, audio out.

Errors are values: a reply that cannot be spoken goes as text, so the caller logs the error and moves on.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant_framework.config.settings import SpeechSettings

if TYPE_CHECKING:  # pragma: no cover
    import requests

#: An answer larger than this is refused (minutes of OGG/Opus speech are a few hundred KB; WAV ten times that).
MAX_AUDIO_BYTES = 25 * 1024 * 1024
#: What is asked for: OGG/Opus, the format of a voice note (servers that cannot make it send another).
RESPONSE_FORMAT = "opus"


@functools.cache
def _session() -> requests.Session:
    from assistant_framework.http_deadline import deadline_session

    return deadline_session()


@dataclass
class Speech:
    """One spoken text: the audio and its type as the server named it, or an error naming what failed."""

    audio: bytes = b""
    content_type: str = ""
    error: str | None = None


def speak(settings: SpeechSettings, text: str, session: requests.Session | None = None) -> Speech:
    """Ask the endpoint to speak ``text``; never raises for the server's failures (blocking)."""
    import requests

    from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request
    from messaging_llm_bot.llm.errors import redirect_detail

    url = settings.base_url.rstrip("/") + "/audio/speech"
    key = settings.api_key or (os.environ.get(settings.api_key_env, "") if settings.api_key_env else "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"model": settings.model, "input": text, "voice": settings.voice, "response_format": RESPONSE_FORMAT}
    seconds = settings.timeout_seconds
    try:
        resp = bounded_request(
            session or _session(),
            "POST",
            url,
            seconds=seconds,
            max_bytes=MAX_AUDIO_BYTES,
            headers=headers,
            json=body,
            allow_redirects=False,  # the reply's text goes to base_url only, as the chat's prompt does
        )
    except DeadlineExceeded:
        return Speech(error=f"speech at {url} did not finish within {seconds:g} s")
    except BodyTooLarge:
        return Speech(error=f"speech at {url} answered more than {MAX_AUDIO_BYTES // (1024 * 1024)} MB")
    except (requests.RequestException, OSError) as err:
        # The URL is safe to name; the key (a header) never appears in the message.
        return Speech(error=f"speech request to {url} failed: {type(err).__name__}")
    if 300 <= resp.status < 400:
        return Speech(error=f"speech at {url}: {redirect_detail(resp.headers)}")
    if resp.status != 200:
        return Speech(error=f"speech at {url} answered HTTP {resp.status}: {resp.text[:200]}")
    if not resp.content:
        return Speech(error=f"speech at {url} answered no audio")
    return Speech(audio=resp.content, content_type=resp.headers.get("content-type", ""))
