"""Decoding mail bytes whose charset is missing or wrong (pure functions).

Order: valid UTF-8 (the commonest mislabel), the declared charset, its common
superset (GB2312 -> GBK -> GB18030, ISO-8859-1 -> windows-1252, ...), detection
with chardet, and only then the declared charset with replacement characters,
which are counted so the run can report them.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from dataclasses import dataclass
from email import quoprimime

import chardet  # a dependency of the package (pyproject.toml)

# Labels that mail software uses for text that is really in a bigger charset.
SUPERSETS = {
    "gb2312": ["gbk", "gb18030"],
    "gbk": ["gb18030"],
    "euc-cn": ["gbk", "gb18030"],
    "iso-8859-1": ["windows-1252"],
    "us-ascii": ["windows-1252"],
    "iso-8859-9": ["windows-1254"],
    "iso-8859-8": ["windows-1255"],
    "iso-8859-8-i": ["windows-1255"],
    "euc-kr": ["cp949"],
    "ks_c_5601-1987": ["cp949"],
    "shift_jis": ["cp932"],
    "big5": ["big5hkscs"],
    "tis-620": ["cp874"],
}
# Supersets that win over the label itself: windows-1252 shows 0x80-0x9F as letters, ISO-8859-1 as controls.
_PREFER_SUPERSET = {"iso-8859-1", "us-ascii"}
_ENCODED_WORD = re.compile(r"=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=")
_BETWEEN_WORDS = re.compile(r"(\?=)\s+(=\?)")


@dataclass
class Decoded:
    """Text, the charset that decoded it, and how many replacement characters it needed."""

    text: str
    charset: str
    replaced: int = 0


def decode_bytes(data: bytes, declared: str | None = None) -> Decoded:
    """``data`` as text: UTF-8, declared, superset, detected, else declared with U+FFFD (counted)."""
    if not data:
        return Decoded("", declared or "utf-8")
    label = _normal(declared)
    if data.isascii():
        return Decoded(data.decode("ascii"), label or "us-ascii")
    candidates = ["utf-8"]
    if label:
        extra = SUPERSETS.get(label, [])
        candidates += [*extra, label] if label in _PREFER_SUPERSET else [label, *extra]
    for charset in candidates:
        try:
            return Decoded(data.decode(charset), charset)
        except (UnicodeDecodeError, LookupError):
            continue
    # chardet is a dependency; the tests take it away to reach the last resort below
    detected = _normal(chardet.detect(data[:65536]).get("encoding")) if chardet is not None else ""
    if detected:
        for charset in [detected, *SUPERSETS.get(detected, [])]:
            try:
                return Decoded(data.decode(charset), charset)
            except (UnicodeDecodeError, LookupError):
                continue
    fallback = label or detected or "utf-8"
    text = data.decode(fallback, errors="replace")
    return Decoded(text, fallback, text.count("\ufffd"))


def decode_header_value(raw: str, hint: str | None = None) -> Decoded:
    """A raw header value (8-bit bytes kept as surrogates, RFC 2047 encoded words) as text.

    Raw 8-bit bytes (older Outlook) are decoded like a body, with the message's
    body charset as the hint; each encoded word with its own charset.
    """
    replaced = 0
    charsets: list[str] = []
    if any("\udc80" <= ch <= "\udcff" for ch in raw):
        outer = decode_bytes(raw.encode("ascii", "surrogateescape"), hint)
        raw, replaced = outer.text, outer.replaced
        charsets.append(outer.charset)
    # Whitespace between two adjacent encoded words is not part of the text (RFC 2047 6.2).
    raw = _BETWEEN_WORDS.sub(r"\1\2", raw)

    def word(match: re.Match[str]) -> str:
        nonlocal replaced
        charset, kind, payload = match.group(1).split("*", 1)[0], match.group(2).upper(), match.group(3)
        try:
            data = (
                base64.b64decode(payload + "=" * (-len(payload) % 4))
                if kind == "B"
                else quoprimime.header_decode(payload).encode("latin-1")
            )
        except (binascii.Error, ValueError, UnicodeEncodeError):
            return match.group(0)
        part = decode_bytes(data, charset)
        replaced += part.replaced
        charsets.append(part.charset)
        return part.text

    text = _ENCODED_WORD.sub(word, raw)
    return Decoded(" ".join(text.split()), ",".join(dict.fromkeys(charsets)) or "us-ascii", replaced)


def _normal(label: str | None) -> str:
    """A charset label as Python's codec name family, lower-case ('' when unknown or empty)."""
    if not label:
        return ""
    label = str(label).strip().strip('"').lower()
    try:
        codecs.lookup(label)
    except LookupError:
        return label if label in SUPERSETS else ""
    aliases = {
        "latin-1": "iso-8859-1",
        "latin1": "iso-8859-1",
        "iso8859-1": "iso-8859-1",
        "ascii": "us-ascii",
        "cp1252": "windows-1252",
        "gb-2312": "gb2312",
        "euc_kr": "euc-kr",
        "shift-jis": "shift_jis",
        "sjis": "shift_jis",
        "euc_jp": "euc-jp",
        "tis620": "tis-620",
    }
    return aliases.get(label, label)
