"""A photo prepared for a vision model: its header checked before anything is decoded, decoded in a bounded
way (one image at a time, a JPEG at a fraction of its size), downscaled to a longest side, turned upright, and
re-encoded from its pixels alone: no EXIF, GPS position, XMP, comment, text chunk or colour profile crosses.

JPEG, PNG and WebP are sent on in their own format; a GIF (or an animated WebP or PNG) by its first frame
only, a GIF as PNG. HEIC/HEIF, TIFF and anything Pillow cannot read are refused with one sentence, and so
are files past ``MAX_IMAGE_BYTES`` and images past ``MAX_IMAGE_PIXELS`` (an image bomb, a few hundred KB that
decode to gigabytes, must not take the bot's memory).
"""

from __future__ import annotations

import base64
import io
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - Pillow loads when the first image is prepared
    from PIL import Image

#: Bigger files are refused by their size, before they are read (a phone photo is a few MB; Telegram lets
#: bots download 20 MB, Signal sends up to 100 MB).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: Bigger images are refused from their header, before decoding. PNG, WebP and GIF are decoded whole, at up to
#: 4 bytes a pixel: 50 megapixels is about 200 MB, and only one image is decoded at a time (``_DECODING``).
#: A 48-50 MP phone photo (8160x6120) fits; a 13300x13300 PNG bomb (177 MP, 0.5 MB of file) does not.
MAX_IMAGE_PIXELS = 50_000_000
#: The formats taken (Pillow's names) and the one each is sent on as; everything else is refused.
SENT_AS = {"JPEG": "JPEG", "MPO": "JPEG", "PNG": "PNG", "WEBP": "WEBP", "GIF": "PNG"}
MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}
JPEG_QUALITY = 85
#: A colour profile larger than this is dropped without converting the colours by it (sRGB is 3 KB, Display P3 0.5 KB).
MAX_ICC_BYTES = 256 * 1024
_ORIENTATION = 0x0112  # the EXIF tag: how the camera was held
#: One image decoded at a time in the process: turns of several chats at once cannot add their peaks up.
_DECODING = threading.Lock()
_UNREADABLE = "I could not read that image; it may be damaged or of a kind I do not know."


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


def _too_large(size: int) -> ImageRefused | None:
    """The refusal of ``size`` bytes of image when they pass ``MAX_IMAGE_BYTES`` (None: they fit)."""
    if size <= MAX_IMAGE_BYTES:
        return None
    return ImageRefused(
        f"That image is {size / 1e6:.1f} MB; I take images up to {MAX_IMAGE_BYTES // (1024 * 1024)} MB."
    )


def prepare_image_file(path: Path, max_side: int) -> PreparedImage | ImageRefused:
    """The image file at ``path`` prepared as ``prepare_image`` does; a file over ``MAX_IMAGE_BYTES`` is refused
    by its size, before a byte of it is read. Never raises for bad input."""
    try:
        with path.open("rb") as file:
            refused = _too_large(os.fstat(file.fileno()).st_size)
            if refused is not None:
                return refused
            data = file.read(MAX_IMAGE_BYTES + 1)  # a file that grew since is still bounded
    except OSError:
        return ImageRefused(_UNREADABLE)
    return prepare_image(data, max_side)


def prepare_image(data: bytes, max_side: int) -> PreparedImage | ImageRefused:
    """``data`` checked from its header (format, pixel count), decoded (a JPEG at the smallest scale that still
    covers ``max_side``; an animation's first frame), downscaled so neither side exceeds ``max_side``, turned
    upright (EXIF orientation), and re-encoded from its pixels; or why not. Never raises for bad input."""
    from PIL import Image, UnidentifiedImageError

    refused = _too_large(len(data))
    if refused is not None:
        return refused
    if _is_heic(data):
        return ImageRefused("That image is HEIC, which I cannot read; please send it as a JPEG (or as a photo).")
    try:
        with _DECODING, warnings.catch_warnings():
            # Our own bound is checked below, from the header; Pillow's bomb warning would only repeat it.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as opened:  # reads the header only
                fmt = SENT_AS.get(opened.format or "")
                if fmt is None:
                    shown = opened.format or "this kind of file"
                    return ImageRefused(f"I can only look at JPEG, PNG, WebP and GIF images, not {shown}.")
                width, height = opened.size  # a GIF's or an animation's whole canvas
                if width * height > MAX_IMAGE_PIXELS:
                    return ImageRefused(
                        f"That image is {width}x{height} pixels, more than I can take "
                        f"({MAX_IMAGE_PIXELS // 1_000_000} megapixels)."
                    )
                small = _decoded_small(opened, fmt, max_side)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
        return ImageRefused(_UNREADABLE)
    return _encoded(small, fmt, (width, height))


def _decoded_small(opened: Image.Image, fmt: str, max_side: int) -> Image.Image:
    """The first frame decoded and brought down to ``max_side``, upright, in a mode its format can save, its
    colours converted to sRGB by its profile; a new image holding nothing but those pixels."""
    from PIL import Image

    if fmt == "JPEG":
        # libjpeg decodes at 1/2, 1/4 or 1/8 of the size directly: a 48 MP photo costs a fraction of 200 MB.
        opened.draft("RGB", (max_side, max_side))
    opened.load()  # the first frame only (a GIF, an animated WebP or PNG)
    orientation = opened.getexif().get(_ORIENTATION)
    icc = opened.info.get("icc_profile")
    image: Image.Image = opened
    if image.mode in ("P", "PA", "1"):  # palette indices cannot be averaged
        image = image.convert("L" if image.mode == "1" else "RGBA" if _has_alpha(image) else "RGB")
    elif image.mode.startswith("I;16"):  # Pillow reduces and resamples 32-bit greys, not 16-bit ones
        image = image.convert("I")
    factor = max(image.size) // (2 * max_side)
    if image.mode in ("RGBA", "LA") and factor > 1:
        # A whole-number reduction first: Pillow's own resize of these copies the whole image (premultiplied).
        image = image.reduce(factor)
    image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)  # reduces by whole factors, then resamples
    image = _upright(_plain(_in_srgb(image, icc)), orientation)
    # Only the pixels cross: no info (EXIF, XMP, comment, text chunks, the colour profile) of the original.
    return Image.frombytes(image.mode, image.size, image.tobytes())


def _has_alpha(image: Image.Image) -> bool:
    return image.mode == "PA" or "transparency" in image.info


def _plain(image: Image.Image) -> Image.Image:
    """``image`` in L, LA, RGB or RGBA (16-bit and float greys scaled to 8 bits, not clipped)."""
    if image.mode in ("L", "LA", "RGB", "RGBA"):
        return image
    if image.mode.startswith("I") or image.mode == "F":
        grey = image if image.mode in ("I", "F") else image.convert("I")
        return grey.point(lambda value: value / 256).convert("L")
    return image.convert("RGB")


def _in_srgb(image: Image.Image, icc: object) -> Image.Image:
    """``image`` with its colours converted from its ICC profile to sRGB (the profile itself is then dropped);
    as it is when it has none, or one that is too large or cannot be read."""
    if not isinstance(icc, bytes) or not icc or len(icc) > MAX_ICC_BYTES:
        return image
    out_mode = {"RGB": "RGB", "RGBA": "RGBA", "CMYK": "RGB"}.get(image.mode)
    if out_mode is None:
        return image
    from PIL import ImageCms

    try:
        source = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        converted = ImageCms.profileToProfile(image, source, ImageCms.createProfile("sRGB"), outputMode=out_mode)
    except (ImageCms.PyCMSError, OSError, ValueError, TypeError):
        return image
    return converted if converted is not None else image


def _upright(image: Image.Image, orientation: object) -> Image.Image:
    """``image`` turned as the EXIF ``orientation`` says the camera was held (as it is without one)."""
    from PIL import Image

    t = Image.Transpose
    turns = {2: t.FLIP_LEFT_RIGHT, 3: t.ROTATE_180, 4: t.FLIP_TOP_BOTTOM, 5: t.TRANSPOSE, 6: t.ROTATE_270}
    turns.update({7: t.TRANSVERSE, 8: t.ROTATE_90})
    method = turns.get(orientation) if isinstance(orientation, int) else None
    return image.transpose(method) if method is not None else image


def _encoded(image: Image.Image, fmt: str, original: tuple[int, int]) -> PreparedImage:
    out = io.BytesIO()
    if fmt == "JPEG":
        if image.mode not in ("RGB", "L"):
            image = image.convert("RGB")
        image.save(out, "JPEG", quality=JPEG_QUALITY, optimize=True)
    elif fmt == "PNG":
        image.save(out, "PNG", optimize=True)
    else:
        image.save(out, "WEBP", quality=JPEG_QUALITY)
    return PreparedImage(
        data=out.getvalue(),
        mime_type=MIME[fmt],
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
    return file_name.lower().rsplit(".", 1)[-1] in ("jpg", "jpeg", "png", "webp", "gif", "heic", "heif")
