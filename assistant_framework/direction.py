"""Direction characters: the Unicode controls that reorder the text after them, and how a page shows them.

A right-to-left override (U+202E) makes ``invoice_<U+202E>fdp.exe`` read "invoice_exe.pdf", and an
unclosed one reverses whatever follows it on the line: a label, a link, a count ("trojan source"). A path
holding one is refused (workspace/paths.py); text that holds one (a mail, a forwarded message, a page saved
as a note) is kept as it is, and a page shows each such character as a visible mark instead: ‹U+202E›.
"""

from __future__ import annotations

import re

#: The embeddings, overrides and isolates (LRE RLE PDF LRO RLO, LRI RLI FSI PDI), as a regex class's body.
#: The marks (LRM, RLM, ALM) are not among them: right-to-left writing uses them, and they move text no more
#: than a letter of their direction does.
CONTROLS = "\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{CONTROLS}]")


def marked(text: str) -> str:
    """``text`` with each direction control replaced by its visible mark, ``‹U+202E›``."""
    return _CONTROL.sub(lambda m: f"‹U+{ord(m.group()):04X}›", text)
