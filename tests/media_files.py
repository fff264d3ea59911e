"""Real media for the media tests: JPEGs with EXIF (GPS position included) made with Pillow, and the
checks a test makes on what the model got (a data URI that decodes to an image without metadata)."""

from __future__ import annotations

import base64
import io

from PIL import Image

#: Where the photo was taken: what must not reach the model (Berlin, 52°31'12"N 13°24'0"E).
GPS = {1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 0.0)}


def jpeg_with_gps(width: int = 3000, height: int = 2000, orientation: int = 1) -> bytes:
    """A real JPEG from a "phone": camera make and model, an orientation and a GPS position in its EXIF."""
    image = Image.new("RGB", (width, height), (30, 120, 60))
    for x in range(0, width, max(1, width // 10)):  # a pattern, so the JPEG is not trivially small
        image.paste((220, 200, 40), (x, 0, x + max(1, width // 20), height))
    exif = Image.Exif()
    exif[0x010F] = "PhoneMaker"  # Make
    exif[0x0110] = "Phone 15"  # Model
    exif[0x0112] = orientation  # Orientation
    exif[0x8825] = GPS  # GPSInfo
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90, exif=exif.tobytes())
    data = out.getvalue()
    assert Image.open(io.BytesIO(data)).getexif().get_ifd(0x8825), "the fixture must carry a GPS position"
    return data


def png_bytes(width: int = 64, height: int = 48) -> bytes:
    """A small real PNG."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 10, 10)).save(out, "PNG")
    return out.getvalue()


#: The first bytes of an iPhone HEIC file (an ISO media ``ftyp`` box of brand ``heic``).
HEIC_HEAD = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 64


def image_parts(request: dict) -> list[dict]:
    """The ``image_url`` parts of the last user message of a chat request."""
    content = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


def decoded(part: dict) -> Image.Image:
    """The image a ``data:`` URI part holds, opened with Pillow."""
    url = part["image_url"]["url"]
    assert url.startswith("data:image/") and ";base64," in url, url[:40]
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1], validate=True)))


def has_metadata(image: Image.Image) -> bool:
    """True when the image carries EXIF (any tag, the GPS position included) or an XMP/ICC block."""
    return bool(image.getexif()) or any(
        key in image.info for key in ("exif", "xmp", "icc_profile", "XML:com.adobe.xmp")
    )


def ogg_opus_seconds(data: bytes) -> float:
    """Check ``data`` is a valid OGG/Opus stream with mutagen (its pages start ``OggS``, the first page's packet
    is the ``OpusHead`` identification header, the second the ``OpusTags``) and return its length in seconds."""
    from mutagen.ogg import OggPage
    from mutagen.oggopus import OggOpus

    assert data[:4] == b"OggS", data[:16]
    stream = io.BytesIO(data)
    first = OggPage(stream)
    assert first.first and first.packets[0].startswith(b"OpusHead"), first.packets[0][:16]
    assert OggPage(stream).packets[0].startswith(b"OpusTags")
    return OggOpus(io.BytesIO(data)).info.length
