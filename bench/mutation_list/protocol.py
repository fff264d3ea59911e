"""Mutations of the skill protocol (protocol/ in the bot): what in a model's answer is read as a call, and how
leniently its JSON is taken."""

from __future__ import annotations

from mutation_list.common import BOT, FRAMING, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    # -- is an answer a call (protocol/framing.py) -----------------------------------------------------
    Mutation(
        "framing-quoted-line",
        f"{BOT}/protocol/framing.py",
        'if before.lstrip().startswith(">") or _LIST_ITEM_RE.match(before):',
        "if _LIST_ITEM_RE.match(before):",
        "a call on a '> ' quoted line runs",
        FRAMING,
    ),
    Mutation(
        "framing-guarded-tail",
        f"{BOT}/protocol/framing.py",
        "    if guarded:\n        return True\n",
        "",
        "in a guarded turn a call followed by a line of prose runs",
        FRAMING,
    ),
    Mutation(
        "framing-open-quote",
        f"{BOT}/protocol/framing.py",
        'return any(mark in _CLOSED_QUOTE_RE.sub("", before) for mark in _OPENERS)',
        "return False",
        "a call after an opening quotation mark still open on its line runs",
        FRAMING,
    ),
    Mutation(
        "framing-lead-lines",
        f"{BOT}/protocol/framing.py",
        "return len(text.strip()) > LEAD_MAX_CHARS or len(lines) > LEAD_MAX_LINES",
        "return len(text.strip()) > LEAD_MAX_CHARS",
        "a call after many short lines of prose runs",
        FRAMING,
    ),
    # -- the protocol's tolerance and every call checked (issue 39.10, issue 40) ------------------------
    Mutation(
        "framing-first-call-only",
        f"{BOT}/protocol/framing.py",
        "if any(_in_quotes(body, start, end) for start, end in spans):",
        "if any(_in_quotes(body, start, end) for start, end in spans[:1]):",
        "a second call quoted on a '> ' line runs (with the first)",
        FRAMING,
    ),
    Mutation(
        "framing-no-same-line-sentence",
        f"{BOT}/protocol/framing.py",
        "return not own_line and not _new_sentence(tail)",
        "return not own_line",
        "an ordinary turn's call between short sentences on its line is refused as quoted",
        FRAMING,
    ),
    Mutation(
        "framing-any-same-line-tail",
        f"{BOT}/protocol/framing.py",
        "return not own_line and not _new_sentence(tail)",
        "return False",
        "a call in a sentence that goes on ('{...} is what the page asks') runs",
        FRAMING,
    ),
    Mutation(
        "framing-new-sentence-any-letter",
        f"{BOT}/protocol/framing.py",
        "return first.isupper() or (first.isalpha() and not first.islower())",
        "return first.isalpha()",
        "a call followed by its sentence going on in lower case runs",
        FRAMING,
    ),
    Mutation(
        "framing-tokens-are-prose",
        f"{BOT}/protocol/framing.py",
        'return TEMPLATE_TOKEN_RE.sub("", text)',
        "return text",
        "a call between a template's special tokens is refused as quoted",
        FRAMING,
    ),
    Mutation(
        "parse-key-case-ignored",
        f"{BOT}/protocol/parse.py",
        "if low != key and low in _PROTOCOL_KEYS:",
        "if False:",
        '{"Skill": ..., "ARGS": ...} is shown to the user instead of running',
        FRAMING,
    ),
    Mutation(
        "parse-key-case-any-key",
        f"{BOT}/protocol/parse.py",
        "if low != key and low in _PROTOCOL_KEYS:",
        "if low != key:",
        "a flat argument's own letter case is changed (City becomes city)",
        FRAMING,
    ),
    Mutation(
        "parse-key-case-two-spellings",
        f"{BOT}/protocol/parse.py",
        "if low in obj or low in renamed:",
        "if False:",
        "an object with a key in two spellings runs the skill its second spelling names",
        FRAMING,
    ),
    Mutation(
        "parse-xml-parameters-unbounded",
        f"{BOT}/protocol/templates.py",
        "if match is None or len(args) >= MAX_XML_PARAMETERS:",
        "if match is None:",
        "a Qwen3-Coder call with any number of parameters is read",
        FRAMING,
    ),
    Mutation(
        "stream-shows-template-calls",
        f"{BOT}/protocol/stream.py",
        "        if self._marker_in_new_text(raw):",
        "        if False:",
        "a Qwen3-Coder call (its <function= tags inside <tool_call>) streams into the chat as it is written",
        ("test_user_traps.py",),
    ),
    Mutation(
        "stream-guard-whole-text-each-delta",
        f"{BOT}/protocol/stream.py",
        "new = raw[max(self._head_at or 0, self._markers_from - _MARKER_OVERLAP) :].lower()",
        "new = raw[self._head_at or 0 :].lower()",
        "each streamed delta searches the whole answer so far again: a long answer's CPU grows with its square",
        ("test_protocol.py",),
    ),
    Mutation(
        "stream-marker-split-over-deltas-shown",
        f"{BOT}/protocol/stream.py",
        "_MARKER_OVERLAP = max(len(marker) for marker in _TEMPLATE_MARKERS) - 1",
        "_MARKER_OVERLAP = 0",
        "a template's call marker split over two deltas after prose is not seen: the call streams into the chat",
        ("test_protocol.py",),
    ),
)
