"""Fetch one web page as plain text; internal addresses are refused unless the owner allows them."""

from __future__ import annotations

from urllib.parse import urljoin

import requests

from assistant_framework.html_text import html_to_text
from assistant_framework.netguard import GuardedSession

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


def run(workspace, args, context=None):
    policy = ((getattr(context, "config", None) or {}).get("policy") or {})
    allow_private = bool(policy.get("allow_private_network", False))
    url = args["url"]
    with GuardedSession(allow_private=allow_private) as session:
        for _ in range(MAX_REDIRECTS + 1):
            # Every hop is checked, resolved once and connected to the checked address: a public page
            # must not redirect (or a name rebind) into the owner's network.
            response = session.get(url, timeout=15, stream=True,
                                   headers={"User-Agent": USER_AGENT, "Accept": "text/html, text/plain, application/json"})
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
            body = _read_capped(response)
    kind = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
    if kind in ("text/html", "application/xhtml+xml"):
        text = html_to_text(body.decode(response.encoding or "utf-8", errors="replace"))
    elif kind.startswith("text/") or kind in ("application/json", ""):
        text = body.decode(response.encoding or "utf-8", errors="replace")
    else:
        raise ValueError(f"{url} is {kind}, not a text page")
    limit = int(args.get("max_chars") or DEFAULT_CHARS)
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters]"
    return {"url": url, "text": text}


def _read_capped(response: requests.Response) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_content(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size >= MAX_BYTES:
            break
    return b"".join(chunks)[:MAX_BYTES]

