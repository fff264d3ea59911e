"""A photo prepared for a vision model: decoded with Pillow, turned upright, downscaled to a longest side,
re-encoded without its metadata (EXIF, GPS position, XMP, ICC comments), as JPEG, PNG or WebP.

Only the three formats every OpenAI-compatible vision server takes are accepted; HEIC/HEIF, GIF, TIFF and
anything Pillow cannot read are refused with one sentence, and so are files or pixel counts past a bound
(a decompression bomb must not take the bot's memory).
"""

from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - Pillow loads when the first image is prepared
    from PIL import Image

#: Bigger files are refused before decoding (Telegram lets bots download 20 MB; a phone photo is a few MB).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: Bigger images are refused before decoding (a 200 MP phone sensor is 16320x12240; past that it is a bomb).
MAX_IMAGE_PIXELS = 200_000_000
#: The formats sent on as they are named (Pillow's names); everything else is refused.
ACCEPTED = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}
_NAMES = {"MPO": "JPEG"}  # a phone's multi-picture JPEG: its first picture is a plain JPEG
JPEG_QUALITY = 85


@dataclass(frozen=True)
class PreparedImage:
    """An image ready for a model: the bytes (no metadata), their type and size, and the original's size."""

    data: bytes
    mime_type: str
    width: int
    height: int
    original_width: int  # as the file gave it (before the EXIF orientation turned it upright)
    original_height: int

    @property
    def data_uri(self) -> str:
        """The bytes as a base64 ``data:`` URI (what every OpenAI-compatible vision server takes)."""
        return f"data:{self.mime_type};base64,{base64.b64encode(self.data).decode('ascii')}"

    def describe(self) -> str:
        """``image/jpeg 1568x1176, 212 KB``: what a trace keeps instead of the pixels."""
        return f"{self.mime_type} {self.width}x{self.height}, {len(self.data) / 1024:.0f} KB"


@dataclass(frozen=True)
class ImageRefused:
    """Why an image cannot go to the model: one sentence for the user."""

    reason: str


def prepare_image(data: bytes, max_side: int) -> PreparedImage | ImageRefused:
    """``data`` decoded, turned upright (EXIF orientation), downscaled so neither side exceeds ``max_side``,
    and re-encoded in its own format without metadata; or why not. Never raises for bad input."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    if len(data) > MAX_IMAGE_BYTES:
        return ImageRefused(
            f"That image is {len(data) / 1e6:.1f} MB; I take images up to {MAX_IMAGE_BYTES // (1024 * 1024)} MB."
        )
    if _is_heic(data):
        return ImageRefused("That image is HEIC, which I cannot read; please send it as a JPEG (or as a photo).")
    try:
        with warnings.catch_warnings():
            # Our own bound is checked below; Pillow's bomb warning would only repeat it.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as opened:
                fmt = _NAMES.get(opened.format or "", opened.format or "")
                if fmt not in ACCEPTED:
                    shown = opened.format or "this kind of file"
                    return ImageRefused(f"I can only look at JPEG, PNG and WebP images, not {shown}.")
                width, height = opened.size
                if width * height > MAX_IMAGE_PIXELS:
                    return ImageRefused(
                        f"That image is {width}x{height} pixels, more than I can take "
                        f"({MAX_IMAGE_PIXELS // 1_000_000} megapixels)."
                    )
                if fmt == "JPEG":
                    # Decode a big JPEG at a fraction of its size: far less memory and time.
                    opened.draft("RGB", (max_side, max_side))
                image = ImageOps.exif_transpose(opened)
                image.load()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return ImageRefused("I could not read that image; it may be damaged or of a kind I do not know.")
    image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    return _encoded(image, fmt, (width, height))


def _encoded(image: Image.Image, fmt: str, original: tuple[int, int]) -> PreparedImage:
    out = io.BytesIO()
    if fmt == "JPEG":
        if image.mode not in ("RGB", "L"):
            image = image.convert("RGB")
        # No ``exif=``, ``icc_profile=`` or comment passed: the new file carries none of the original's metadata.
        image.save(out, "JPEG", quality=JPEG_QUALITY, optimize=True)
    elif fmt == "PNG":
        image.save(out, "PNG", optimize=True)
    else:
        image.save(out, "WEBP", quality=JPEG_QUALITY)
    return PreparedImage(
        data=out.getvalue(),
        mime_type=ACCEPTED[fmt],
        width=image.width,
        height=image.height,
        original_width=original[0],
        original_height=original[1],
    )


def _is_heic(data: bytes) -> bool:
    """An ISO base media file whose brand is HEIC/HEIF/AVIF (``ftyp`` box at offset 4)."""
    return data[4:8] == b"ftyp" and data[8:12] in (b"heic", b"heix", b"hevc", b"heim", b"heis", b"mif1", b"msf1")


def is_image_type(mime_type: str | None, file_name: str = "") -> bool:
    """True for a file a chat says is an image (its MIME type, else its name's extension)."""
    if mime_type:
        return mime_type.lower().startswith("image/")
    return file_name.lower().rsplit(".", 1)[-1] in ("jpg", "jpeg", "png", "webp", "heic", "heif")
