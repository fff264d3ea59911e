"""Real media for the media tests: JPEGs with EXIF (GPS position included) made with Pillow, and the
checks a test makes on what the model got (a data URI that decodes to an image without metadata)."""

from __future__ import annotations

import base64
import functools
import io

from PIL import Image

#: Where the photo was taken: what must not reach the model (Berlin, 52°31'12"N 13°24'0"E).
GPS = {1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 0.0)}


@functools.lru_cache(maxsize=16)
def jpeg_with_gps(width: int = 3000, height: int = 2000, orientation: int = 1) -> bytes:
    """A real JPEG from a "phone": camera make and model, an orientation and a GPS position in its EXIF. Made once
    per process and arguments (bytes: nothing can change them; a 3000x2000 one is about 40 ms of CPU)."""
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


#: What Pillow reads of a file's own structure (the JFIF header its JPEG encoder writes, a WebP's loop and
#: background): not metadata of the original.
STRUCTURE = {"jfif", "jfif_version", "jfif_unit", "jfif_density", "dpi", "loop", "background", "version"}


def has_metadata(image: Image.Image) -> bool:
    """True when the image carries EXIF (any tag, the GPS position included) or anything else beside its pixels:
    XMP, a colour profile, a JPEG or GIF comment, PNG text chunks."""
    return bool(image.getexif()) or any(key not in STRUCTURE for key in image.info)


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


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    import struct
    import zlib

    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bomb(side: int = 13300) -> bytes:
    """A real, valid RGB PNG of ``side`` x ``side`` black pixels: the default 13300x13300 is 0.5 MB of file and
    177 megapixels, over 700 MB once Pillow decodes it. Its zlib stream repeats one self-contained deflate block of
    zeros (each ends with a full flush), so it is built without compressing the half gigabyte it holds."""
    import struct
    import zlib

    total = side * (1 + 3 * side)  # each row: the filter byte "none", then its RGB bytes; all zero
    piece = 1 << 20

    def deflated(size: int, end: int) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        return packer.compress(bytes(size)) + packer.flush(end)

    whole, rest = divmod(total, piece)
    stream = deflated(piece, zlib.Z_FULL_FLUSH) * whole + deflated(rest, zlib.Z_FINISH)
    adler = ((total % 65521) << 16) | 1  # Adler-32 of zero bytes: a stays 1, b grows by 1 a byte
    data = b"\x78\xda" + stream + struct.pack(">I", adler)
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)  # 8 bits, RGB, deflate, no filter, no interlace
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", data) + _png_chunk(b"IEND", b"")


def gif_canvas_bomb(width: int = 13300, height: int = 13300) -> bytes:
    """A 40-byte GIF whose first frame is one pixel on a canvas of ``width`` x ``height``: decoding that frame
    fills the whole canvas (177 megapixels by default)."""
    import struct

    screen = b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0)  # no global colour table
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0x80)  # one pixel, a local table of 2 colours follows
    table = b"\x00\x00\x00\xff\xff\xff"
    lzw = b"\x02\x02\x44\x01\x00"  # minimum code size 2; one block: clear, index 0, end
    return screen + frame + table + lzw + b"\x3b"


def webp_canvas_bomb(width: int = 13300, height: int = 13300) -> bytes:
    """A 92-byte animated WebP whose one frame is one pixel on a canvas of ``width`` x ``height`` (at most 16384):
    decoding it fills the whole canvas, 4 bytes a pixel, more than once (3.4 GB at the default, measured)."""
    import struct

    def chunk(kind: bytes, data: bytes) -> bytes:
        return kind + struct.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")

    def u24(value: int) -> bytes:
        return struct.pack("<I", value)[:3]

    one = io.BytesIO()
    Image.new("RGBA", (1, 1), (255, 0, 0, 255)).save(one, "WEBP", lossless=True)
    single = one.getvalue()
    at = single.index(b"VP8L")
    size = struct.unpack("<I", single[at + 4 : at + 8])[0]
    pixel = single[at : at + 8 + size + size % 2]  # the one pixel's VP8L chunk
    canvas = chunk(b"VP8X", bytes([0x02 | 0x10]) + b"\0\0\0" + u24(width - 1) + u24(height - 1))  # animated, alpha
    frame = chunk(b"ANMF", u24(0) * 4 + u24(100) + b"\0" + pixel)  # at 0,0; 1x1; 100 ms
    body = b"WEBP" + canvas + chunk(b"ANIM", bytes(6)) + frame
    return b"RIFF" + struct.pack("<I", len(body)) + body


def png_noise(width: int, height: int) -> bytes:
    """A real RGB PNG of random pixels, stored without compression: about ``3 * width * height`` bytes of file for
    few pixels (a file over the byte bound whose pixel count no pixel bound would catch). Laid out here, as
    ``png_bomb`` is: each row the filter byte "none" and its pixels, in stored deflate blocks (Pillow's encoder
    at level 0 still chose a filter for every row: 0.4 s of CPU for 7 megapixels, 0.05 s so)."""
    import os
    import struct
    import zlib

    pixels = os.urandom(3 * width * height)
    row = 3 * width
    raw = b"".join(b"\0" + pixels[at : at + row] for at in range(0, len(pixels), row))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, RGB, deflate, no filter, no interlace
    idat = zlib.compress(raw, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")
