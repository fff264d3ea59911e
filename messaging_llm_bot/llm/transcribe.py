"""Speech-to-text through an OpenAI-compatible ``POST {base_url}/audio/transcriptions`` endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import requests

DEFAULT_TIMEOUT_SECONDS = 120.0


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
    import requests  # on use: the Telegram frontend imports this module before its first poll

    url = str(config["base_url"]).rstrip("/") + "/audio/transcriptions"
    headers = {"Authorization": f"Bearer {config['api_key']}"} if config.get("api_key") else {}
    timeout = float(config.get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS)
    http = session or requests
    form = {"model": str(config["model"]), "response_format": "json"}
    if config.get("language"):
        form["language"] = str(config["language"])
    try:
        resp = http.post(
            url, headers=headers, timeout=timeout, data=form, files={"file": (file_name, audio, content_type)}
        )
    except requests.RequestException as err:
        # The URL is safe to name; headers (the key) never appear in the message.
        return Transcription(error=f"transcription request to {url} failed: {type(err).__name__}")
    if resp.status_code != 200:
        return Transcription(error=f"transcription at {url} answered HTTP {resp.status_code}: {resp.text[:200]}")
    try:
        body = resp.json()
    except ValueError:
        return Transcription(text=resp.text.strip())  # some servers answer plain text regardless
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str):
        return Transcription(error=f"transcription at {url} returned no 'text' field")
    return Transcription(text=text.strip())
