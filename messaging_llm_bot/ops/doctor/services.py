"""The doctor's checks of the outside services the assistant is configured to use: the web search backend
(one search through the ``web_search`` skill itself, so the doctor sees what the model would), the speech
server (``voice.tts``: a one-word speech) and the transcription server (``llm.transcription``: half a second of
silence). Each is asked one minimal request; a failure is the service's own one sentence and the key to fix.
DuckDuckGo, the search that needs nothing set up and is on unless turned off, is a warning when it fails: a
machine without internet (a local model's normal case) works without web search, and the fix is the off switch
(``search.enabled: false``: nothing is asked). A backend the owner set up (a SearXNG, a key) failing is a failure.
``--quick`` skips them (each sends a request to a server that may count it)."""

from __future__ import annotations

import io
import tempfile
import wave
from dataclasses import replace
from pathlib import Path

from assistant_framework.config.settings import Settings
from assistant_framework.hints import CLI
from assistant_framework.skills import SkillContext, SkillManager
from assistant_framework.workspace import Workspace
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, SKIP, WARN, Check, Context

#: Seconds a service has to answer the doctor (its own timeout when that is shorter).
PROBE_SECONDS = 10.0
#: What the doctor searches for: an everyday word, one result.
PROBE_QUERY = "weather"
#: How web search is turned off (a machine offline on purpose).
SEARCH_OFF = f"`{CLI} config set search.enabled false`"


def check_services(ctx: Context) -> list[Check]:
    if ctx.quick or ctx.config is None:
        return []
    settings = ctx.settings
    checks = []
    if "search" in ctx.config:  # configured (the shipped config is): the default is not asked unbidden
        checks.append(_search(ctx, settings))
    if settings.voice.tts.usable:
        checks.append(_speech(settings))
    if settings.llm.transcription.usable:
        checks.append(_transcription(settings))
    return checks


def _search(ctx: Context, settings: Settings) -> Check:
    section = settings.search
    if not section.enabled:
        return Check("search", SKIP, "web search is off (search.enabled: false): the model is not offered web_search")
    name = f"search {section.backend}"
    quick = replace(settings, search=replace(section, timeout_seconds=min(section.timeout_seconds, PROBE_SECONDS)))
    # The check runs no skill that writes: it gets a workspace that is never created or touched.
    unused = Workspace(Path(tempfile.gettempdir()) / "assistant-doctor-unused", create=False)
    manager = SkillManager.from_config(ctx.config or {}, unused)
    try:
        if manager.get("web_search") is None:
            return Check(name, FAIL, "the web_search skill did not load", f"`{CLI} skills list` says why")
        context = SkillContext(conversation_id="doctor", config=ctx.config or {}, settings=quick)
        result = manager.run("web_search", {"query": PROBE_QUERY, "max_results": 1}, context)
    finally:
        manager.close()
    if result.ok:
        return Check(name, OK, f"{section.backend} answered a search for {PROBE_QUERY!r}")
    # The skill's own sentence, without the manager's frame the model reads it in.
    said = str(result.error or "the search failed").removeprefix("skill 'web_search' failed: ValueError: ")
    if section.backend == "duckduckgo":  # the default, asked for by nobody: offline is not a broken config
        return Check(
            name,
            WARN,
            f"{said[:400]}; the assistant works without web search",
            f"no internet on purpose? {SEARCH_OFF} turns web search off (the model is not offered it)",
        )
    return Check(
        name,
        FAIL,
        said[:400],
        f"check what it names, or choose another backend: `{CLI} config set search.backend searxng` with "
        f"search.url (docs/skills.md, Web search), or turn web search off: {SEARCH_OFF}",
    )


def _speech(settings: Settings) -> Check:
    from messaging_llm_bot.llm.speech import speak

    tts = settings.voice.tts
    spoken = speak(replace(tts, timeout_seconds=min(tts.timeout_seconds, PROBE_SECONDS)), "ok")
    if spoken.error is None:
        kind = spoken.content_type or "audio"
        return Check("speech", OK, f"{tts.base_url} spoke a word ({kind}, {len(spoken.audio)} bytes)")
    return Check(
        "speech",
        FAIL,
        spoken.error[:400],
        "start the speech server, or fix voice.tts.base_url, voice.tts.model and voice.tts.api_key",
    )


def _transcription(settings: Settings) -> Check:
    from messaging_llm_bot.llm.transcribe import transcribe

    stt = settings.llm.transcription
    heard = transcribe(
        replace(stt, timeout_seconds=min(stt.timeout_seconds, PROBE_SECONDS)), _silence(), "doctor.wav", "audio/wav"
    )
    if heard.error is None:
        return Check("transcription", OK, f"{stt.base_url} transcribed half a second of silence")
    return Check(
        "transcription",
        FAIL,
        heard.error[:400],
        "start the transcription server, or fix llm.transcription.base_url, .model and .api_key",
    )


def _silence() -> bytes:
    """Half a second of 16 kHz mono silence as a WAV file: the smallest audio every server reads."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(b"\0\0" * 8000)
    return out.getvalue()
