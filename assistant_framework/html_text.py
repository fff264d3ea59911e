"""HTML to readable plain text with the stdlib parser (for mail bodies and feed summaries)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK = {
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "pre",
    "table",
    "ul",
    "ol",
    "hr",
}
# Not "head": its end tag is optional (a minified page leaves it out), and what it holds besides
# these has no text.
_SKIP = {"script", "style", "title"}


class _TextParser(HTMLParser):
    def __init__(self, links: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self.keep_links = links
        self.parts: list[str] = []
        self._skip = 0
        self._links: list[str | None] = []
        # A table row is one line with its cells apart ("Apple | 1.20", not "Apple1.20"); empty
        # cells (a newsletter's spacers) add no separator.
        self._row_text = False  # the current row has shown text
        self._separate = False  # a new cell began after text: a separator before its first text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self._row_text = self._separate = False
        elif tag in ("td", "th"):
            self._separate = self._row_text
        if tag in _SKIP:
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
            if tag == "li":
                self.parts.append("- ")
        if tag == "a":
            self._links.append(dict(attrs).get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag == "a" and self._links:
            href = self._links.pop()
            if self.keep_links and href and href.startswith(("http://", "https://")):
                self.parts.append(f" <{href}>")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            if data.strip():
                if self._separate:
                    self.parts.append(" | ")
                self._row_text, self._separate = True, False
            self.parts.append(data)


def html_to_text(html: str, links: bool = True) -> str:
    """Visible text of an HTML fragment: block tags become line breaks, links keep their URL (unless ``links``
    is false)."""
    parser = _TextParser(links)
    parser.feed(html)  # stops at the first tag, comment or declaration that is not finished before the end
    if parser.rawdata.startswith("<"):
        # Unfinished, it runs to the end and shows nothing (HTML5; Python's parser from 3.12.11 and 3.13.4). Before
        # that, close() went on through the rest in time quadratic in it: 160 KB of "<a" took 38 s of a thread.
        parser.rawdata = ""
    parser.close()
    text = "".join(parser.parts).replace("\xa0", " ")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
