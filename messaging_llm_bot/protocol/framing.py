"""Is an answer a call, or text that quotes one?

A model that summarises a document holding a skill call, or explains what a mail asks for, writes
the call inside its prose. That call is text: it must never run. An answer IS a call when it is
nothing but calls, with at most a short lead-in before them ("Let me check that for you."), short
words between them ("then:"), and one short line after them ("One moment."), the drift forms small
models write. A call inside quotation marks (straight, curly, guillemets, inline code), on a quoted
line (``> ...``, as outside content is shown to the model), in a list item that says something about
it, amid longer prose, or followed by more prose (a sentence going on, more lines, more list items)
is quoted text.

Where no outside content is in view, the line after the call may also be a short sentence of its
own on the call's line ("Checking now. {...} One moment."): it starts a new sentence (a capital or a
caseless letter), where a sentence going on ("{...} is what the page asks") starts in lower case.

In a guarded turn (outside content in view, where quoting is what the model is likely doing) the
rule is stricter: nothing but punctuation may follow the last call.

The special tokens chat templates put around a call (``TEMPLATE_TOKEN_RE``) are markup, not prose:
they are left out before the text around the calls is judged.
"""

from __future__ import annotations

import itertools
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
#: The special tokens of chat templates around a call, bounded in length: ``<|tool_call|>`` and
#: ``<|/tool_call|>`` (Phi-4-mini, Granite), ``<|python_tag|>``, ``<|eom_id|>`` (Llama 3.x),
#: ``<|tool_calls_section_begin|>`` (Kimi K2), ``<｜tool▁calls▁begin｜>`` (DeepSeek, full-width bars),
#: ``<tool_call>`` (Hermes, Qwen), ``</function>``, ``[TOOL_CALLS]`` (Mistral).
TEMPLATE_TOKEN_RE = re.compile(
    r"<\|/?[A-Za-z_][\w./-]{0,40}\|>|<｜[^｜<>\n]{1,40}｜>|</?(?:tool_call|tool_calls|function_call)>|</function>"
    r"|\[/?TOOL_CALLS\]",
    re.IGNORECASE,
)


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


def _new_sentence(text: str) -> bool:
    """True when ``text`` (what follows a call on its line) starts a sentence of its own: after the
    punctuation closing the call's sentence, a capital or a letter of a script without case."""
    first = text.lstrip(_PUNCTUATION)[:1]
    return first.isupper() or (first.isalpha() and not first.islower())


def _prose_after(tail: str, guarded: bool) -> bool:
    """True when what follows the last call is more prose than one short sentence (on a line of its
    own, or starting anew on the call's line)."""
    if not tail.strip(_PUNCTUATION):
        return False  # nothing, or only the punctuation closing a sentence
    if guarded:
        return True
    own_line = tail.lstrip(" \t").startswith(("\n", "\r"))
    lines = [line for line in tail.splitlines() if line.strip()]
    more_items = bool(lines) and (lines[0].lstrip().startswith(">") or _LIST_ITEM_RE.match(lines[0]) is not None)
    if more_items or len(lines) > 1 or len(tail.strip()) > TAIL_MAX_CHARS:
        return True
    return not own_line and not _new_sentence(tail)


def without_tokens(text: str) -> str:
    """``text`` without the template tokens in it (``TEMPLATE_TOKEN_RE``)."""
    return TEMPLATE_TOKEN_RE.sub("", text)


def quoted_calls(body: str, spans: list[tuple[int, int]], *, guarded: bool = False) -> str | None:
    """Why the calls found at ``spans`` (in order, each with its fence or tag) are quoted text and not
    the answer (a ``recovered`` label), or None when the answer is the calls."""
    if any(_in_quotes(body, start, end) for start, end in spans):
        return "quoted_call"
    between = [body[0 : spans[0][0]]] + [body[a:b] for (_, a), (b, _) in itertools.pairwise(spans)]
    if any(_too_long(without_tokens(text)) for text in between):
        return "call_in_prose"
    if _prose_after(without_tokens(body[spans[-1][1] :]), guarded):
        return "call_in_prose"
    return None
