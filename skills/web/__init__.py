"""Fetch one web page as plain text; internal addresses are refused unless the owner allows them."""

from __future__ import annotations

import codecs
import json
import re
from email.message import Message
from email.utils import collapse_rfc2231_value
from urllib.parse import urljoin

import chardet
import feedparser
import requests
import urllib3

from assistant_framework.config.settings import Settings
from assistant_framework.html_text import html_to_text
from assistant_framework.http_deadline import BodyTooLarge, Deadline, DeadlineExceeded, read_body
from assistant_framework.netguard import BlockedURLError, GuardedSession
from assistant_framework.skills import OwnWordsError
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.workspace import Workspace

DESCRIPTION = "Fetch a web page (http/https URL) and return its text; use for links the user gives."
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "pattern": "^https?://"},
        "max_chars": {"type": "integer", "minimum": 200, "maximum": 20000},
    },
    "required": ["url"],
    "additionalProperties": False,
}
CAPABILITIES = ["network"]
TIMEOUT_SECONDS = 30

MAX_BYTES = 2_000_000
MAX_REDIRECTS = 5
DEFAULT_CHARS = 6000
USER_AGENT = "assistant-framework/0.1 (personal assistant)"


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object:
    allow_private = settings_of(context).policy.allow_private_network
    url = args["url"]
    # A server dripping a byte at a time never trips a per-read timeout: the whole fetch has a
    # deadline inside the skill's own timeout, so it ends (with what arrived) instead of reading on
    # in the background after the call was given up.
    seconds = read_deadline(context)
    with GuardedSession(allow_private=allow_private) as session, Deadline(seconds) as deadline:
        for _ in range(MAX_REDIRECTS + 1):
            # Every hop is checked, resolved once and connected to the checked address: a public page
            # must not redirect (or a name rebind) into the owner's network.
            try:
                response = _get(session, url, deadline)
            except BlockedURLError as exc:
                # The model's own URL refused is the guard's words about the model's words; a redirect's
                # target came from the server (its Location header), so that refusal stays outside content.
                if url == args["url"]:
                    raise OwnWordsError(str(exc)) from None
                raise
            except requests.RequestException:
                if deadline.expired:  # cut while the headers were still arriving
                    raise ValueError(f"{url} did not answer within {seconds:g} s") from None
                raise
            if deadline.fired:  # cut in the headers (http.client takes the cut for their end)
                response.close()
                raise ValueError(f"{url} did not answer within {seconds:g} s")
            if response.is_redirect and response.headers.get("location"):
                url = urljoin(url, response.headers["location"])
                response.close()
                continue
            break
        else:
            raise ValueError(f"{args['url']} redirects more than {MAX_REDIRECTS} times")
        with response:
            if response.status_code >= 400:
                raise ValueError(f"{url} answered HTTP {response.status_code}")
            kind = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
            if not readable(kind):  # refused before its body is read: a PDF or video is not downloaded
                raise ValueError(f"{url} is {kind}, not a text page")
            body, finished = _read_capped(response, deadline)
    text = _page_text(body, kind, response.headers.get("content-type"))
    tail = "" if finished else f"\n[... the page was still loading after {seconds:g} s; this is what arrived]"
    budget = settings_of(context).runtime.skill_result_limit_chars
    return _fitted(url, text, tail, int(args.get("max_chars") or DEFAULT_CHARS), budget)


def _page_text(body: bytes, kind: str, content_type: str | None) -> str:
    """The page's words: HTML as text, a feed as its entries, other XML and text as they are."""
    if kind in ("text/html", "application/xhtml+xml"):
        return html_to_text(decode(body, content_type, html=True))
    if is_xml(kind):
        # A feed the user links to reads as its entries; other XML as its source text.
        return feed_text(body) or decode(body, content_type)
    return decode(body, content_type)


def _fitted(url: str, text: str, tail: str, max_chars: int, budget: int) -> dict[str, str]:
    """The result cut here, with a note, to what the model is shown (``max_chars``, and the result's JSON within
    ``budget``): the manager would cut the JSON mid-string."""
    shown = text[:max_chars]
    while True:
        note = f"\n[... {len(text) - len(shown)} more characters]" if len(shown) < len(text) else ""
        result = {"url": url, "text": shown + note + tail}
        overflow = len(json.dumps(result, ensure_ascii=False)) - budget
        if overflow <= 0 or not shown:
            return result
        shown = shown[: len(shown) - overflow]


def _get(session: GuardedSession, url: str, deadline: Deadline) -> requests.Response:
    return session.get(
        url,
        timeout=max(0.5, min(15.0, deadline.remaining())),
        stream=True,
        headers={
            "User-Agent": USER_AGENT,
            "Accept": "text/html, text/plain, application/json, application/xml;q=0.9",
        },
    )


def is_xml(kind: str) -> bool:
    """True for XML media types (feeds, sitemaps): ``text/xml``, ``application/xml``, ``*+xml``."""
    return kind in ("text/xml", "application/xml") or kind.endswith("+xml")


def readable(kind: str) -> bool:
    """True for the media types the skill turns into text (an absent type is tried as text)."""
    return kind.startswith("text/") or kind in ("application/json", "") or is_xml(kind)


MAX_FEED_ENTRIES = 30


def feed_text(body: bytes) -> str | None:
    """An RSS/Atom/RDF feed as plain text: its title, then one block per entry (title, date, link,
    summary as text); None when ``body`` is not a feed with entries (pure)."""
    parsed = feedparser.parse(body)
    if not parsed.entries:
        return None
    lines = [str(parsed.feed.get("title") or "Feed").strip()]
    for entry in parsed.entries[:MAX_FEED_ENTRIES]:
        head = " · ".join(
            str(v).strip() for v in (entry.get("title"), entry.get("published") or entry.get("updated")) if v
        )
        summary = html_to_text(str(entry.get("summary") or "")).strip()
        lines.append(
            "\n".join(
                part
                for part in (
                    f"- {head or '(untitled)'}",
                    f"  {entry.get('link')}" if entry.get("link") else "",
                    f"  {summary}" if summary else "",
                )
                if part
            )
        )
    if len(parsed.entries) > MAX_FEED_ENTRIES:
        lines.append(f"[... {len(parsed.entries) - MAX_FEED_ENTRIES} more entries]")
    return "\n\n".join(lines)


def settings_of(context: SkillContext | None) -> Settings:
    """The config's records the call runs under (the defaults when called without a context)."""
    return context.settings if context is not None else Settings()


def read_deadline(context: SkillContext | None) -> float:
    """Seconds for the whole fetch: 80% of the skill's timeout (``runtime.skill_timeouts.web`` or its own)."""
    timeout = settings_of(context).runtime.skill_timeouts.get("web") or TIMEOUT_SECONDS
    return max(1.0, 0.8 * float(timeout))


_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
# <meta charset="..."> or <meta http-equiv="Content-Type" content="text/html; charset=...">.
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
# As browsers do (WHATWG Encoding): these labels mean windows-1252, whose 0x80-0x9F are letters and quotes.
_AS_WINDOWS_1252 = {"iso-8859-1", "latin-1", "latin1", "iso8859-1", "us-ascii", "ascii"}


def decode(body: bytes, content_type: str | None, html: bool = False) -> str:
    """The page's text as a browser would read it: BOM, the header's charset, the page's <meta>, then UTF-8.

    Without any declaration, text that is not UTF-8 is decoded by chardet's guess (else windows-1252).
    """
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body.decode(codec, errors="replace")
    labels = [_header_charset(content_type)]
    if html:
        match = _META_CHARSET.search(body[:4096])
        labels.append(match.group(1).decode("ascii") if match else None)
    for label in labels:
        found = _codec(label)
        if found:
            return body.decode(found, errors="replace")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(body) - 3:  # only the last character, cut by the size cap
            return body.decode("utf-8", errors="replace")
    guess = _codec(chardet.detect(body[:65536]).get("encoding")) or "windows-1252"
    return body.decode(guess, errors="replace")


def _codec(label: str | None) -> str | None:
    """Python's codec for a charset label; None for a label no codec knows ("utf8mb4", "none")."""
    label = (label or "").strip().strip("'\"").lower()
    if label in _AS_WINDOWS_1252:
        return "windows-1252"
    try:
        return codecs.lookup(label).name if label else None
    except LookupError:
        return None


def _header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    header = Message()
    header["content-type"] = content_type
    charset = header.get_param("charset")
    # An RFC 2231 parameter comes as a (charset, language, value) triple.
    return collapse_rfc2231_value(charset) if isinstance(charset, tuple) else charset


def _read_capped(response: requests.Response, deadline: Deadline) -> tuple[bytes, bool]:
    """The body (decompressed) up to MAX_BYTES, and whether it ended before ``deadline``."""
    try:
        return read_body(response, deadline, max_bytes=MAX_BYTES), True
    except DeadlineExceeded as exc:
        return exc.partial, False
    except BodyTooLarge as exc:
        return exc.partial[:MAX_BYTES], True
    except (TimeoutError, urllib3.exceptions.TimeoutError):
        return b"", False
