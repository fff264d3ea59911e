"""Markup checks for the fake Bot API: parse MarkdownV2 / HTML / Markdown like Telegram does.

Each parser returns ``(plain_text, entities)`` or raises :class:`MarkupError` whose message
is the part after ``"Bad Request: can't parse entities: "`` in the real server's reply.
The parsers are deliberately strict in the places where real LLM output trips Telegram
(unescaped reserved characters, unclosed entities, unknown or unbalanced HTML tags).
"""

from __future__ import annotations

import html
import re

MDV2_RESERVED = set("_*[]()~`>#+-=|{}.!")
# Inside code only '`' and '\\' are escaped, so the end is the first unescaped backtick(s).
_MDV2_CODE = re.compile(r"((?:\\.|[^`\\])*)`", re.DOTALL)
_MDV2_PRE = re.compile(r"((?:\\.|(?!```)[^\\])*)```", re.DOTALL)
ENTITY_TYPES = {
    "mention",
    "hashtag",
    "cashtag",
    "bot_command",
    "url",
    "email",
    "phone_number",
    "bold",
    "italic",
    "underline",
    "strikethrough",
    "spoiler",
    "blockquote",
    "expandable_blockquote",
    "code",
    "pre",
    "text_link",
    "text_mention",
    "custom_emoji",
    "date_time",
}


class MarkupError(ValueError):
    """The markup of a message text does not parse."""


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, as Telegram counts offsets."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class _Builder:
    """Accumulates plain text and entities while a parser walks the markup."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.pos = 0  # UTF-16 offset of the end of the plain text so far
        self.entities: list[dict] = []
        self.open: list[tuple[str, int, dict]] = []  # (type, start offset, extra fields)

    def add(self, text: str) -> None:
        self.chunks.append(text)
        self.pos += utf16_len(text)

    def start(self, kind: str, **extra: str) -> None:
        self.open.append((kind, self.pos, extra))

    def is_open(self, kind: str) -> bool:
        return any(k == kind for k, _, _ in self.open)

    def close(self, kind: str, where: int, **extra: str) -> None:
        if not self.open or self.open[-1][0] != kind:
            raise MarkupError(
                f"Can't find end of {self._name(self.open[-1][0])} entity at byte offset {where}"
                if self.open
                else f"Unexpected end of {kind} entity at byte offset {where}"
            )
        _, begin, fields = self.open.pop()
        fields = {**fields, **extra}
        if self.pos > begin:
            self.entities.append({"type": kind, "offset": begin, "length": self.pos - begin, **fields})

    def finish(self) -> tuple[str, list[dict]]:
        if self.open:
            kind = self.open[-1][0]
            raise MarkupError(f"Can't find end of {self._name(kind)} entity at byte offset {self.open[-1][1]}")
        self.entities.sort(key=lambda e: (e["offset"], -e["length"]))
        return "".join(self.chunks), self.entities

    @staticmethod
    def _name(kind: str) -> str:
        return {"text_link": "TextUrl", "strikethrough": "Strikethrough"}.get(kind, kind.capitalize())


def parse_markdown_v2(text: str) -> tuple[str, list[dict]]:
    """Parse MarkdownV2: every reserved character outside markup must be escaped."""
    b = _Builder()
    i, n = 0, len(text)
    line_start = True
    while i < n:
        ch = text[i]
        offset = len(text[:i].encode("utf-8"))
        if ch == "\\":
            if i + 1 >= n:
                raise MarkupError(f"Character '\\' at byte offset {offset} must be followed by a character")
            b.add(text[i + 1])
            i += 2
        elif text.startswith("```", i):
            m = _MDV2_PRE.match(text, i + 3)
            if not m:
                raise MarkupError(f"Can't find end of Pre entity at byte offset {offset}")
            body, end = m.group(1), m.end() - 3
            language = ""
            if "\n" in body:
                first, rest = body.split("\n", 1)
                if first and re.fullmatch(r"[\w+#.-]+", first):
                    language, body = first, rest
            body = re.sub(r"\\([`\\])", r"\1", body)
            b.start("pre", **({"language": language} if language else {}))
            b.add(body)
            b.close("pre", offset)
            i = end + 3
        elif ch == "`":
            m = _MDV2_CODE.match(text, i + 1)
            if not m:
                raise MarkupError(f"Can't find end of Code entity at byte offset {offset}")
            end = m.end() - 1
            b.start("code")
            b.add(re.sub(r"\\([`\\])", r"\1", m.group(1)))
            b.close("code", offset)
            i = end + 1
        elif text.startswith("||", i):
            b.close("spoiler", offset) if b.is_open("spoiler") else b.start("spoiler")
            i += 2
        elif text.startswith("__", i):
            b.close("underline", offset) if b.is_open("underline") else b.start("underline")
            i += 2
        elif ch in "*_~":
            kind = {"*": "bold", "_": "italic", "~": "strikethrough"}[ch]
            b.close(kind, offset) if b.is_open(kind) else b.start(kind)
            i += 1
        elif ch == "[":
            b.start("text_link")
            i += 1
        elif ch == "]" and b.is_open("text_link"):
            m = re.match(r"\]\(((?:\\.|[^)\\])*)\)", text[i:])
            if not m:
                raise MarkupError(f"Can't find end of URL for TextUrl entity at byte offset {offset}")
            b.close("text_link", offset, url=re.sub(r"\\(.)", r"\1", m.group(1)))
            i += m.end()
        elif ch == ">" and line_start:
            i += 1  # blockquote marker; the quote entity itself is not modelled
        elif ch in MDV2_RESERVED:
            raise MarkupError(f"Character '{ch}' is reserved and must be escaped with the preceding '\\'")
        else:
            b.add(ch)
            i += 1
        line_start = ch == "\n"
    return b.finish()


_HTML_TAGS = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_TAG_RE = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^<>]*)?)>")
_ATTR_RE = re.compile(r"""([a-zA-Z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")


def parse_html(text: str) -> tuple[str, list[dict]]:
    """Parse Telegram HTML: only supported tags, properly nested; bare '<' is an error."""
    b = _Builder()
    stack: list[str] = []
    i = 0
    for m in _TAG_RE.finditer(text):
        _add_html_text(b, text[i : m.start()], len(text[:i].encode("utf-8")))
        closing, tag, attrs = m.group(1), m.group(2).lower(), m.group(3)
        offset = len(text[: m.start()].encode("utf-8"))
        i = m.end()
        if tag not in _HTML_TAGS:
            raise MarkupError(f'Unsupported start tag "{tag}" at byte offset {offset}')
        kind = _HTML_TAGS[tag]
        if closing:
            if not stack or stack[-1] != tag:
                raise MarkupError(
                    f'Unmatched end tag at byte offset {offset}, expected "</{stack[-1]}>", found "</{tag}>"'
                    if stack
                    else f"Unexpected end tag at byte offset {offset}"
                )
            stack.pop()
            if tag == "code" and stack and stack[-1] == "pre":
                continue  # <pre><code class="language-x"> is one pre entity
            b.close(kind, offset)
        else:
            fields = {k.lower(): v1 or v2 or v3 for k, v1, v2, v3 in _ATTR_RE.findall(attrs)}
            stack.append(tag)
            if tag == "code" and len(stack) > 1 and stack[-2] == "pre":
                lang = fields.get("class", "").removeprefix("language-")
                if lang:
                    b.open[-1][2]["language"] = lang
                continue
            if tag == "a" and "href" not in fields:
                raise MarkupError(f"Can't find URL for text link at byte offset {offset}")
            extra = {"url": fields["href"]} if tag == "a" else {}
            b.start(kind, **extra)
    _add_html_text(b, text[i:], len(text[:i].encode("utf-8")))
    if stack:
        raise MarkupError(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return b.finish()


def _add_html_text(b: _Builder, chunk: str, base: int) -> None:
    if "<" in chunk or ">" in chunk:
        pos = min(p for p in (chunk.find("<"), chunk.find(">")) if p >= 0)
        raise MarkupError(
            f"Unsupported start tag at byte offset {base + pos}"
            if chunk[pos] == "<"
            else f"Unexpected '>' at byte offset {base + pos}"
        )
    b.add(html.unescape(chunk))


def parse_markdown_legacy(text: str) -> tuple[str, list[dict]]:
    """Parse legacy Markdown: *bold*, _italic_, `code`, ```pre```, [text](url); no nesting."""
    b = _Builder()
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        offset = len(text[:i].encode("utf-8"))
        if ch == "\\" and i + 1 < n and text[i + 1] in "*_`[":
            b.add(text[i + 1])
            i += 2
        elif ch in "*_`":
            fence = "```" if text.startswith("```", i) else ch
            end = text.find(fence, i + len(fence))
            if end < 0:
                raise MarkupError(f"Can't find end of the entity starting at byte offset {offset}")
            kind = {"*": "bold", "_": "italic", "`": "code", "```": "pre"}[fence]
            b.start(kind)
            b.add(text[i + len(fence) : end])
            b.close(kind, offset)
            i = end + len(fence)
        elif ch == "[":
            m = re.match(r"\[([^\]]*)\]\(([^)]*)\)", text[i:])
            if not m:
                raise MarkupError(f"Can't find end of the entity starting at byte offset {offset}")
            b.start("text_link")
            b.add(m.group(1))
            b.close("text_link", offset, url=m.group(2))
            i += m.end()
        else:
            b.add(ch)
            i += 1
    return b.finish()


def parse_text(text: str, parse_mode: str | None) -> tuple[str, list[dict]]:
    """Dispatch on ``parse_mode`` (case-insensitive); no mode means the text is plain."""
    mode = (parse_mode or "").lower()
    if not mode:
        return text, []
    parser = {"markdownv2": parse_markdown_v2, "html": parse_html, "markdown": parse_markdown_legacy}.get(mode)
    if parser is None:
        raise MarkupError(f"Unsupported parse_mode {parse_mode!r}")
    return parser(text)


def check_entities(text: str, entities: list) -> None:
    """Raise MarkupError when an explicit entity is malformed or lies outside the text."""
    total = utf16_len(text)
    if not isinstance(entities, list):
        raise MarkupError("Entities must be an array")
    for index, ent in enumerate(entities):
        if not isinstance(ent, dict) or ent.get("type") not in ENTITY_TYPES:
            raise MarkupError(f"Unsupported entity type in entity {index}")
        offset, length = ent.get("offset"), ent.get("length")
        if not isinstance(offset, int) or not isinstance(length, int) or offset < 0 or length <= 0:
            raise MarkupError(f"Wrong offset or length of entity {index}")
        if offset + length > total:
            raise MarkupError(f"Entity {index} ends at {offset + length}, beyond the end of the text ({total})")
        if ent["type"] == "text_link" and not ent.get("url"):
            raise MarkupError(f"Text link entity {index} has no URL")
