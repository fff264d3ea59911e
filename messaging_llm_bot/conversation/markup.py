"""Model Markdown as plain text plus style ranges, split into sendable parts (any chat frontend).

Markdown is converted with ``telegramify-markdown`` into plain text and entity dicts
(``{"type", "offset", "length", ...}``, offsets in UTF-16 code units, which both Telegram and
Signal count in), so no markup escaping can fail. Parts are measured after rendering with the
frontend's own measure (Telegram: UTF-16 units; Signal: UTF-8 bytes) and are cut on paragraph,
then line, then word boundaries; a code block is only cut when it alone exceeds a part, and then
each piece carries its own entity (a closed block).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict, cast

from telegramify_markdown import convert

EMPTY_PLACEHOLDER = "(empty reply)"
# Entities whose inside should not host a cut: a cut there breaks code or a link in two.
_UNSPLITTABLE = {
    "pre",
    "code",
    "text_link",
    "url",
    "email",
    "mention",
    "hashtag",
    "cashtag",
    "bot_command",
    "phone_number",
    "custom_emoji",
    "text_mention",
}
_MIN_LIMIT = 16


class Entity(TypedDict):
    """One style range of converted text, in the Telegram Bot API's MessageEntity shape (what the converter's
    ``to_dict`` gives): offsets and lengths in UTF-16 code units; the optional keys only where they apply."""

    type: str  # bold, italic, code, pre, text_link, ...
    offset: int
    length: int
    url: NotRequired[str]  # text_link
    language: NotRequired[str]  # pre
    custom_emoji_id: NotRequired[str]
    user: NotRequired[dict[str, object]]  # text_mention
    unix_time: NotRequired[int]
    date_time_format: NotRequired[str]


_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*$")

#: Size of one character in a frontend's limit unit.
CharSize = Callable[[str], int]


def utf16_units(ch: str) -> int:
    """UTF-16 code units of one character (Telegram's and Signal's offsets, Telegram's limit)."""
    return 2 if ord(ch) > 0xFFFF else 1


def utf8_bytes(ch: str) -> int:
    """UTF-8 bytes of one character (Signal's 2000-byte message body limit)."""
    return len(ch.encode("utf-8", "surrogatepass"))


@dataclass
class MessagePart:
    """One message: plain text and its entities (offsets in UTF-16 units)."""

    text: str
    entities: list[Entity] = field(default_factory=list)


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fit_text(text: str, limit: int, size: CharSize = utf16_units) -> str:
    """``text`` cut to ``limit`` units of ``size`` (a live message's one message), ending with "…" when cut."""
    if sum(map(size, text)) <= limit:
        return text
    out, used = [], 1  # room for the ellipsis
    for ch in text:
        if used + size(ch) > limit:
            break
        out.append(ch)
        used += size(ch)
    return "".join(out) + "…"


# Not "(" or "[": telegramify-markdown reads \( \) and \[ \] as LaTeX math. An escaped "]"
# already stops a link ("[text\](url)" is no link), and "$" is escaped against $$ math.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\]#+\-.!|~<>&=$])")


def escape_markdown(text: str) -> str:
    """``text`` with the Markdown-significant ASCII punctuation backslash-escaped (pure), so it
    renders as itself: a mail subject ``[Click](https://evil)`` shows as typed, not as a link."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text or "")


def unescape_markdown(text: str) -> str:
    """The inverse of ``escape_markdown``, for a frontend that shows Markdown source (the terminal)."""
    return re.sub(r"\\([\\`*_{}\]#+\-.!|~<>&=$])", r"\1", text or "")


def markdown_entities(markdown: str) -> tuple[str, list[Entity]] | None:
    """Convert Markdown to (plain text, entities); None when the converter fails."""
    try:
        text, entity_objs = convert(markdown or "")
    except Exception:  # noqa: BLE001 - a converter bug must not lose the reply; plain text still goes out
        return None
    return text, [cast(Entity, e.to_dict()) for e in entity_objs]  # to_dict is typed a bare dict


#: An entity's opening and closing markers in a platform's own markup, or None to show its text plain.
Markers = Callable[[Entity], "tuple[str, str] | None"]


def with_markers(markdown: str, markers: Markers, escape: Callable[[str], str] = lambda ch: ch) -> str:
    """The Markdown as a platform with inline markers shows it (WhatsApp's and Slack's ``*bold*``): the plain
    text of ``markdown_entities`` (each character through ``escape``), each entity wrapped in its markers."""
    converted = markdown_entities(markdown)
    if converted is None:
        return markdown
    text, entities = converted
    opens: dict[int, list[str]] = {}
    closes: dict[int, list[str]] = {}
    for entity in sorted(entities, key=lambda e: (e["offset"], -e["length"])):
        start, end = entity["offset"], entity["offset"] + entity["length"]
        pair = markers(entity)
        if pair is None or entity["length"] == 0:
            continue
        opens.setdefault(start, []).append(pair[0])
        closes.setdefault(end, []).insert(0, pair[1])
    out: list[str] = []
    units = 0
    for ch in text:
        out += closes.pop(units, [])
        out += opens.pop(units, [])
        out.append(escape(ch))
        units += utf16_units(ch)
    out += closes.pop(units, [])
    return "".join(out).replace("⦁ ", "- ")


def terminal_text(markdown: str) -> str:
    """Markdown as a terminal shows it: the text without its markup (``**Now**`` reads "Now", escapes
    gone), a link followed by its address in brackets; the source with escapes removed when the
    converter fails."""
    converted = markdown_entities(markdown)
    if converted is None:
        return unescape_markdown(markdown)
    text, _entities = inline_links(*converted)
    return re.sub(r"^⦁ ", "- ", text, flags=re.MULTILINE)  # a list as it was typed, not Telegram's bullet


def inline_links(text: str, entities: list[Entity]) -> tuple[str, list[Entity]]:
    """Each link's address written after its label (``label (url)``), for a platform that shows no link
    entity (Signal, the terminal): the ranges after it shifted, one around it grown, the link's own grown to
    hold its address (label and address stay in one part); a label that holds its address already is left as
    it is (pure)."""
    links = sorted(
        (e for e in entities if e.get("type") == "text_link" and e.get("url")),
        key=lambda e: e["offset"] + e["length"],
        reverse=True,
    )
    if not links:
        return text, entities
    entities = [e.copy() for e in entities]
    for link in links:
        link = next(
            e
            for e in entities
            if e.get("type") == "text_link"
            and e.get("url") == link["url"]
            and e["offset"] == link["offset"]
            and e["length"] == link["length"]
        )
        pos = link["offset"] + link["length"]
        if link["url"] in slice16(text, link["offset"], pos):
            continue
        suffix = f" ({link['url']})"
        width = utf16_len(suffix)
        text = slice16(text, 0, pos) + suffix + slice16(text, pos, None)
        for ent in entities:
            if ent is link:
                continue
            if ent["offset"] >= pos:
                ent["offset"] += width
            elif ent["offset"] + ent["length"] > pos:
                ent["length"] += width
        link["length"] += width
    return text, entities


def slice16(text: str, start: int, end: int | None) -> str:
    """``text`` from UTF-16 unit ``start`` to ``end`` (None: its end), as entity offsets count."""
    raw = text.encode("utf-16-le", "surrogatepass")
    return raw[2 * start : None if end is None else 2 * end].decode("utf-16-le", "surrogatepass")


def render_parts(
    markdown: str, limit: int, size: CharSize = utf16_units, *, links_inline: bool = False
) -> list[MessagePart]:
    """Render Markdown to parts of at most ``limit`` units each; never returns an empty part. ``links_inline``: a
    link's address written after its label (``inline_links``), for a platform without link entities."""
    check_limit(limit)
    converted = markdown_entities(markdown)
    if converted is None:
        return [MessagePart(p, []) for p in plain_parts(markdown, limit, size)]
    text, entities = inline_links(*converted) if links_inline else converted
    return split_rendered(text, entities, limit, size) or [MessagePart(EMPTY_PLACEHOLDER, [])]


def plain_parts(text: str, limit: int, size: CharSize = utf16_units) -> list[str]:
    """Split plain text with the same boundary rules; fenced code cut in two is closed and reopened."""
    check_limit(limit)
    text = text or ""
    fences = _fenced_blocks(text)
    reserve = max((len(opener) + len(close) + 2 for _, _, opener, close in fences), default=0)
    if reserve and _table(text, size)[-1] <= limit:
        reserve = 0  # fits whole: no fence will be cut
    regions = [(s, e) for s, e, _, _ in fences]
    out: list[str] = []
    for start, end in _split_spans(text, regions, limit - reserve, size):
        piece = text[start:end]
        for s, e, opener, close in fences:
            if s < start < e and not piece.lstrip("\n").startswith(opener):
                piece = opener + "\n" + piece.lstrip("\n")
            if s < end < e and text[end:e].strip() != close.strip():
                piece = piece.rstrip("\n") + "\n" + close
        out.append(piece)
    return out or [EMPTY_PLACEHOLDER]


def check_limit(limit: int) -> None:
    """Refuse part limits too small to hold a word."""
    if limit < _MIN_LIMIT:
        raise ValueError(f"markup: part limit {limit} is below the minimum of {_MIN_LIMIT}")


def split_rendered(text: str, entities: list[Entity], limit: int, size: CharSize = utf16_units) -> list[MessagePart]:
    """Split rendered text and clip its entities (UTF-16 offsets) into each part."""
    units = _table(text, utf16_units)
    index_of = {u: i for i, u in enumerate(units)}
    regions = []
    for ent in entities:
        if ent["type"] in _UNSPLITTABLE:
            start = index_of.get(ent["offset"])
            end = index_of.get(ent["offset"] + ent["length"])
            if start is not None and end is not None:
                regions.append((start, end))
    parts = []
    for start, end in _split_spans(text, regions, limit, size):
        lo, hi = units[start], units[end]
        clipped: list[Entity] = []
        for ent in entities:
            a, b = max(ent["offset"], lo), min(ent["offset"] + ent["length"], hi)
            if b > a:
                clipped.append({**ent, "offset": a - lo, "length": b - a})
        parts.append(MessagePart(text[start:end], clipped))
    return parts


def _table(text: str, size: CharSize) -> list[int]:
    """table[i] = size of text[:i] in the limit unit; table[len(text)] = total."""
    units = [0] * (len(text) + 1)
    total = 0
    for i, ch in enumerate(text):
        units[i] = total
        total += size(ch)
    units[len(text)] = total
    return units


def _split_spans(
    text: str, regions: list[tuple[int, int]], limit: int, size: CharSize = utf16_units
) -> list[tuple[int, int]]:
    """Cut ``text`` into trimmed, non-empty (start, end) index spans of at most ``limit`` units."""
    units = _table(text, size)
    spans = []
    start, n = 0, len(text)
    while start < n:
        hard = bisect_right(units, units[start] + limit) - 1
        cut = n if hard >= n else _choose_cut(text, start, hard, regions)
        span = _trim(text, start, cut, regions)
        if span:
            spans.append(span)
        start = cut
    return spans


def _inside(pos: int, regions: list[tuple[int, int]]) -> bool:
    return any(s < pos < e for s, e in regions)


def _choose_cut(text: str, start: int, hard: int, regions: list[tuple[int, int]]) -> int:
    """Best cut in (start, hard]: paragraph > line > sentence > word, outside code if at all possible."""
    window = text[start : hard + 1]
    para = [start + m.end() for m in re.finditer(r"\n[ \t]*\n", window)]
    line = [start + m.end() for m in re.finditer(r"\n", window)]
    sentence = [start + m.end() for m in re.finditer(r"[.!?…][)\"'»”]*[ \t]+", window)]
    word = [start + m.start() for m in re.finditer(r"\s", window)] + [
        start + m.end() for m in re.finditer(r"\s", window)
    ]
    kinds = [sorted(c for c in cands if start < c <= hard) for cands in (para, line, sentence, word)]
    half = start + (hard - start) // 2
    for allow_inside, kinds_here in ((False, kinds), (True, kinds[1:])):
        for floor in (half, start + 1):
            for cands in kinds_here:
                for c in reversed(cands):
                    if c < floor:
                        break
                    if allow_inside or not _inside(c, regions):
                        return c
    return max(hard, start + 1)  # one token longer than a part: a hard cut is the only way


def _trim(text: str, start: int, end: int, regions: list[tuple[int, int]]) -> tuple[int, int] | None:
    """Drop whitespace at the edges, keeping indentation when a span starts or ends inside code."""
    in_code_start = any(s <= start < e for s, e in regions)  # a code block may open with indentation
    while start < end and (text[start] == "\n" if in_code_start else text[start].isspace()):
        start += 1
    in_code_end = _inside(end, regions)
    while end > start and (text[end - 1] == "\n" if in_code_end else text[end - 1].isspace()):
        end -= 1
    if not _visible(text[start:end]):
        return None
    return start, end


def _visible(text: str) -> bool:
    """True when ``text`` shows something: not only whitespace and invisible format characters
    (a reply of a lone zero-width space arrived as an empty-looking bubble)."""
    return any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


def _fenced_blocks(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, opener line, closing fence) of each fenced code block in raw Markdown."""
    blocks = []
    pos, opener, fence, block_start = 0, "", "", 0
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\n")
        if not fence:
            m = _FENCE_OPEN.match(bare)
            if m:
                opener, fence, block_start = bare.strip(), m.group(1), pos
        elif bare.strip().startswith(fence) and not bare.strip().strip(fence[0]):
            blocks.append((block_start, pos + len(bare), opener, fence))
            fence = ""
        pos += len(line)
    if fence:  # unterminated: the block runs to the end
        blocks.append((block_start, len(text), opener, fence))
    return blocks
