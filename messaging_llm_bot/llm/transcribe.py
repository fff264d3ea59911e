"""Speech-to-text through an OpenAI-compatible ``POST {base_url}/audio/transcriptions`` endpoint."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import requests

DEFAULT_TIMEOUT_SECONDS = 120.0
#: A transcript answer larger than this is refused (hours of speech are far less).
MAX_ANSWER_BYTES = 4 * 1024 * 1024


@functools.cache
def _session() -> "requests.Session":
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


def transcription_config(llm_config: dict) -> dict | None:
    """The ``llm.transcription`` section when it is usable (base_url and model set), else None."""
    section = (llm_config or {}).get("transcription") or None
    if not isinstance(section, dict) or not section.get("base_url") or not section.get("model"):
        return None
    if section.get("enabled") is False:
        return None
    return section


def transcribe(
    config: dict,
    audio: bytes,
    file_name: str = "voice.ogg",
    content_type: str = "audio/ogg",
    session: "requests.Session | None" = None,
) -> Transcription:
    """Send ``audio`` as multipart (file, model) and return the transcript; errors are values."""
    # On use: the Telegram frontend imports this module before its first poll.
    import requests

    from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request

    url = str(config["base_url"]).rstrip("/") + "/audio/transcriptions"
    headers = {"Authorization": f"Bearer {config['api_key']}"} if config.get("api_key") else {}
    timeout = float(config.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS)
    form = {"model": str(config["model"]), "response_format": "json"}
    if config.get("language"):
        form["language"] = str(config["language"])
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
        )
    except DeadlineExceeded:
        return Transcription(error=f"transcription at {url} did not finish within {timeout:g} s")
    except BodyTooLarge:
        return Transcription(error=f"transcription at {url} answered more than {MAX_ANSWER_BYTES // 1024} KB")
    except (requests.RequestException, OSError) as err:
        # The URL is safe to name; headers (the key) never appear in the message.
        return Transcription(error=f"transcription request to {url} failed: {type(err).__name__}")
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
