"""Direction characters: the Unicode controls that reorder the text after them, and how a page shows them.

A right-to-left override (U+202E) makes ``invoice_<U+202E>fdp.exe`` read "invoice_exe.pdf", and an
unclosed one reverses whatever follows it on the line: a label, a link, a count ("trojan source"). A path
holding one is refused (workspace/paths.py); text that holds one (a mail, a forwarded message, a page saved
as a note) is kept as it is, and a page shows each such character as a visible mark instead: ‹U+202E›.

The marks (LRM, RLM, ALM) are invisible letters of their direction: ``pay <RLM>100 200 300`` reads
"pay 300 200 100", ``<ALM>2024-12-05`` "05-12-2024". Right-to-left writing uses them beside its letters, where
they do what a letter there does already; a mark with no letter of its direction near it on its line is shown
as its mark too, so Hebrew and Arabic text keeps its marks and a Latin line cannot hide one.
"""

from __future__ import annotations

import re
import unicodedata

#: The embeddings, overrides and isolates (LRE RLE PDF LRO RLO, LRI RLI FSI PDI), as a regex class's body.
CONTROLS = "\u202a-\u202e\u2066-\u2069"
#: LRM, RLM and ALM.
MARKS = "\u200e\u200f\u061c"
#: A control, or a run of marks (decided together: they share their neighbours).
_SHOWN = re.compile(f"[{CONTROLS}]|[{MARKS}]+")
#: How far a mark's letter is looked for, each way: right-to-left writing puts a mark next to the word or the
#: number and punctuation it places.
NEAR = 32
#: Writing puts a mark beside a word or a number; text with more than ``FEW`` marks and more than one in ``SPARSE``
#: characters (a page made of them) has each shown, unchecked: checking one costs a few microseconds.
FEW = 8
SPARSE = 16
#: The line ends (bidi paragraph separators, and U+2028): a letter on another line does not place a mark.
_LINE_ENDS = "\n\r\x1c\x1d\x1e\x85\u2028\u2029"
#: From after a mark to its letter: digits, spaces, punctuation, other marks; not a letter, not a line end.
_TO_LETTER = re.compile(f"(?:[^\\w{_LINE_ENDS}]|[\\d_])*")
#: The last letter or line end before a mark.
_LAST_LETTER = re.compile(f"(?s:.*)([^\\W\\d_]|[{_LINE_ENDS}])")


def _right_to_left(char: str) -> bool:
    return unicodedata.bidirectional(char) in ("R", "AL")


def _letters_beside(text: str, start: int, end: int) -> set[bool]:
    """The directions (right to left: True) of the nearest letter before ``start`` and after ``end``, each within
    ``NEAR`` characters on the line. Each search is one regex over at most NEAR characters: a page of marks is
    linear."""
    found: set[bool] = set()
    before = _LAST_LETTER.match(text, max(0, start - NEAR), start)
    if before and before.group(1) not in _LINE_ENDS:
        found.add(_right_to_left(before.group(1)))
    limit = min(len(text), end + NEAR)
    after = _TO_LETTER.match(text, end, limit).end()  # type: ignore[union-attr]  # it matches "" at least
    if after < limit and text[after] not in _LINE_ENDS:
        found.add(_right_to_left(text[after]))
    return found


def _mark(char: str) -> str:
    return f"‹U+{ord(char):04X}›"


def _shown(found: re.Match[str]) -> str:
    chars = found.group()
    if chars[0] not in MARKS:
        return _mark(chars)
    beside = _letters_beside(found.string, found.start(), found.end())
    return "".join(char if (char != "\u200e") in beside else _mark(char) for char in chars)


def _all_shown(found: re.Match[str]) -> str:
    return "".join(map(_mark, found.group()))


def marked(text: str) -> str:
    """``text`` with each direction control, and each mark with no letter of its direction beside it, replaced by
    its visible mark, ``‹U+202E›``."""
    marks = sum(map(text.count, MARKS))
    dense = marks > FEW and marks * SPARSE > len(text)
    return _SHOWN.sub(_all_shown if dense else _shown, text)
