"""Audio for a voice note: Telegram plays ``sendVoice`` files as voice messages when they are OGG/Opus, and
Signal clients play an ``audio/ogg`` attachment. A speech server asked for ``opus`` usually sends exactly
that; anything else (WAV, MP3, FLAC, AAC) is converted with PyAV (libav in its wheels: no system binary),
an optional extra (``pip install '.[voice]'``).
"""

from __future__ import annotations

import io
import struct

#: Opus runs at 48 kHz whatever the source's rate; a voice note is mono.
OPUS_RATE = 48_000
#: The conversion refuses sources longer than this (a reply spoken is a minute or two).
MAX_SECONDS = 15 * 60
VOICE_EXTRA = "pip install '.[voice]'"


class AudioError(Exception):
    """Audio that cannot be made into a voice note; the message says why, in one sentence."""


def is_ogg_opus(data: bytes) -> bool:
    """True when ``data`` starts with an Ogg page whose packet is an Opus identification header (``OpusHead``)."""
    if len(data) < 27 or data[:4] != b"OggS" or data[4] != 0:
        return False
    segments = data[26]
    start = 27 + segments
    return data[start : start + 8] == b"OpusHead" and len(data) >= start + sum(data[27:start])


def ogg_duration(data: bytes) -> float | None:
    """Seconds of an OGG/Opus stream (the last page's granule position at 48 kHz, less the pre-skip)."""
    last = data.rfind(b"OggS")
    head = data.find(b"OpusHead")
    if last < 0 or head < 0 or len(data) < last + 14 or len(data) < head + 12:
        return None
    granule = struct.unpack_from("<q", data, last + 6)[0]
    pre_skip = struct.unpack_from("<H", data, head + 10)[0]
    return max(0.0, (granule - pre_skip) / OPUS_RATE) if granule >= 0 else None


def to_ogg_opus(data: bytes) -> bytes:
    """``data`` (any audio libav decodes) as a mono OGG/Opus stream; raises AudioError saying why not."""
    try:
        import av
    except ImportError:
        raise AudioError(f"converting audio to OGG/Opus needs PyAV ({VOICE_EXTRA})") from None
    out = io.BytesIO()
    try:
        with av.open(io.BytesIO(data), "r") as source, av.open(out, "w", format="ogg") as target:
            if not source.streams.audio:
                raise AudioError("the speech server's answer holds no audio")
            stream = target.add_stream("libopus", rate=OPUS_RATE, layout="mono")
            resampler = av.AudioResampler(format="s16", layout="mono", rate=OPUS_RATE)
            samples = 0
            for frame in source.decode(audio=0):
                samples += frame.samples * OPUS_RATE // max(1, frame.sample_rate or OPUS_RATE)
                if samples > MAX_SECONDS * OPUS_RATE:
                    raise AudioError(f"the spoken reply is longer than {MAX_SECONDS // 60} minutes")
                for piece in resampler.resample(frame):
                    target.mux(stream.encode(piece))
            for piece in resampler.resample(None):
                target.mux(stream.encode(piece))
            target.mux(stream.encode(None))
    except AudioError:
        raise
    except (av.FFmpegError, ValueError, EOFError) as err:
        raise AudioError(f"the speech server's audio could not be read ({type(err).__name__})") from None
    return out.getvalue()
