"""Real audio for the fake speech endpoint (``FakeChatServer``'s ``POST /v1/audio/speech``): a tone encoded
as a speech server would send it. WAV with the standard library; OGG/Opus, MP3 and FLAC with PyAV (the
``voice`` extra, in the dev install)."""

from __future__ import annotations

import functools
import io
import math
import wave

#: What each ``response_format`` is served as (OpenAI's Content-Types).
CONTENT_TYPES = {"opus": "audio/opus", "mp3": "audio/mpeg", "wav": "audio/wav", "flac": "audio/flac"}


def tone_wav(seconds: float, rate: int = 24_000) -> bytes:
    """A 440 Hz tone as 16-bit mono WAV (Kokoro speaks at 24 kHz, Piper at 22.05 kHz)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as target:
        target.setnchannels(1)
        target.setsampwidth(2)
        target.setframerate(rate)
        frames = bytearray()
        for i in range(int(seconds * rate)):
            frames += int(6000 * math.sin(2 * math.pi * 440 * i / rate)).to_bytes(2, "little", signed=True)
        target.writeframes(bytes(frames))
    return out.getvalue()


@functools.lru_cache(maxsize=32)
def encoded(fmt: str, seconds: float) -> bytes:
    """A tone of ``seconds`` in ``fmt`` (opus, mp3, wav, flac); made once per process and length (bytes: nothing
    can change them), as the tests send the same note and the fake speaks the same replies again (20-35 ms of
    encoding each)."""
    wav = tone_wav(seconds)
    if fmt == "wav":
        return wav
    import av

    codec, container, rate = {"opus": ("libopus", "ogg", 48_000), "mp3": ("libmp3lame", "mp3", 24_000)}.get(
        fmt, ("flac", "flac", 24_000)
    )
    out = io.BytesIO()
    with av.open(io.BytesIO(wav)) as source, av.open(out, "w", format=container) as target:
        stream = target.add_stream(codec, rate=rate, layout="mono")
        resampler = av.AudioResampler(format=stream.codec_context.format.name, layout="mono", rate=rate)
        for frame in source.decode(audio=0):
            for piece in resampler.resample(frame):
                target.mux(stream.encode(piece))
        for piece in resampler.resample(None):
            target.mux(stream.encode(piece))
        target.mux(stream.encode(None))
    return out.getvalue()
