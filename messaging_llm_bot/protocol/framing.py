"""Is an answer a call, or text that quotes one?

A model that summarises a document holding a skill call, or explains what a mail asks for, writes
the call inside its prose. That call is text: it must never run. An answer IS a call when it is
nothing but calls, with at most a short lead-in before them ("Let me check that for you."), short
words between them ("then:"), and one short line after them ("One moment."), the drift forms small
models write. A call inside quotation marks (straight, curly, guillemets, inline code), on a quoted
line (``> ...``, as outside content is shown to the model), in a list item that says something about
it, amid longer prose, or followed by more prose (a sentence going on, more lines, more list items)
is quoted text.

In a guarded turn (outside content in view, where quoting is what the model is likely doing) the
rule is stricter: nothing but punctuation may follow the last call.
"""

from __future__ import annotations

import re

#: Text before the first call (and between calls): at most this much, on at most this many lines.
LEAD_MAX_CHARS = 240
LEAD_MAX_LINES = 3
#: Text after the last call: one line of at most this much, on a line of its own.
TAIL_MAX_CHARS = 100

_PAIRS = {'"': '"', "'": "'", "`": "`", "“": "”", "„": "“", "‘": "’", "‚": "‘", "«": "»", "‹": "›", "「": "」"}
_PAIRS.update({"»": "«", "『": "』", "”": "”"})  # Danish/Swedish forms: »…«, ”…”
#: Closed quotations on one line, removed before asking whether a quotation is still open.
_CLOSED_QUOTE_RE = re.compile(r'"[^"\n]*"|“[^“”\n]*[”“]|„[^“”\n]*[“”]|«[^«»\n]*»|»[^«»\n]*«|「[^」\n]*」|『[^』\n]*』')
_OPENERS = '"“„«»「『'
#: A list item's marker: a call inside an item that says something about it belongs to a list.
_LIST_ITEM_RE = re.compile(r"\s*(?:[-*•+]|\d{1,3}[.)])\s+\S")
_PUNCTUATION = " \t\r\n.,;:!?)]}…-–—*_~"


def _in_quotes(body: str, start: int, end: int) -> bool:
    """True when the text at ``body[start:end]`` is quoted: between a pair of quotation marks, after
    an opening mark still open on its line, or on a line quoted with ``>``."""
    line_start = body.rfind("\n", 0, start) + 1
    before = body[line_start:start]
    if before.lstrip().startswith(">") or _LIST_ITEM_RE.match(before):
        return True  # a quoted line, or a list item that says something about the call
    left = before.rstrip(" \t")[-1:]
    right = body[end:].lstrip(" \t")[:1]
    if left and left in _PAIRS and right == _PAIRS[left]:
        return True
    return any(mark in _CLOSED_QUOTE_RE.sub("", before) for mark in _OPENERS)


def _too_long(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return len(text.strip()) > LEAD_MAX_CHARS or len(lines) > LEAD_MAX_LINES


def _prose_after(tail: str, guarded: bool) -> bool:
    """True when what follows the last call is more prose than a short line of its own."""
    if not tail.strip(_PUNCTUATION):
        return False  # nothing, or only the punctuation closing a sentence
    if guarded:
        return True
    own_line = tail.lstrip(" \t").startswith(("\n", "\r"))
    lines = [line for line in tail.splitlines() if line.strip()]
    more_items = bool(lines) and (lines[0].lstrip().startswith(">") or _LIST_ITEM_RE.match(lines[0]) is not None)
    return not own_line or more_items or len(lines) > 1 or len(tail.strip()) > TAIL_MAX_CHARS


def quoted_calls(body: str, spans: list[tuple[int, int]], *, guarded: bool = False) -> str | None:
    """Why the calls found at ``spans`` (in order, each with its fence or tag) are quoted text and not
    the answer (a ``recovered`` label), or None when the answer is the calls."""
    if any(_in_quotes(body, start, end) for start, end in spans):
        return "quoted_call"
    between = [body[0 : spans[0][0]]] + [body[a:b] for (_, a), (b, _) in zip(spans, spans[1:], strict=False)]
    if any(_too_long(text) for text in between):
        return "call_in_prose"
    if _prose_after(body[spans[-1][1] :], guarded):
        return "call_in_prose"
    return None
