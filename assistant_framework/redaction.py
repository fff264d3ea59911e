"""Redact secrets in text shown to users, written to logs or stored in traces, and in URLs kept as names
(``url_secrets`` and ``url_without_secrets`` live beside the config's ``redact``, which uses them), and in links
kept to be followed (``link_without_secrets``: a feed entry's link).

A server that echoes a key often cuts or masks part of it ("sk-abc…xyz", the key minus its last
characters). So besides every whole secret, any run of ``MIN_RUN`` or more consecutive characters
of a secret (of at least ``MIN_RUN`` characters) is replaced by ``***``. Shorter secrets are
replaced only whole: their fragments would shred ordinary words.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from assistant_framework.config import REDACTED
from assistant_framework.config.env import link_without_credentials, url_secrets, url_without_secrets

__all__ = [
    "MIN_RUN",
    "link_without_secrets",
    "redact_text",
    "secret_spans",
    "url_key",
    "url_secrets",
    "url_without_secrets",
]

#: The shortest run of a secret's characters that counts as a leak.
MIN_RUN = 8


def secret_spans(text: str, secrets: Iterable[str], min_run: int = MIN_RUN) -> list[tuple[int, int]]:
    """Merged ``[start, end)`` spans of ``text`` that are a whole secret or a run of ``min_run``+ of its characters."""
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        if not secret:
            continue
        # Every run of min_run+ characters is covered by its min_run-long windows, all found here;
        # C-speed str.find per window keeps this cheap on long texts (traces).
        width = len(secret) if len(secret) < min_run else min_run
        for i in _window_starts(text, secret, width):
            gram = secret[i : i + width]
            start = text.find(gram)
            while start != -1:
                spans.append((start, start + width))
                start = text.find(gram, start + 1)
    if not spans:
        return []
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def _window_starts(text: str, secret: str, width: int) -> Iterable[int]:
    """Where the ``width``-long windows of ``secret`` that may occur in ``text`` start. Each window holds the piece
    of ``width // 2`` characters that starts at the first multiple of that length in it: a window whose piece
    is not in the text is not either. The pieces are a quarter of the searches of the windows, and a text that
    holds no secret (nearly every trace and log line) needs no more."""
    step = width // 2
    if step < 2 or len(secret) <= width:
        return range(len(secret) - width + 1)  # too short to split: the window searches are as few
    present = {j for j in range(0, len(secret) - step + 1, step) if secret[j : j + step] in text}
    return [i for i in range(len(secret) - width + 1) if -(-i // step) * step in present]


def redact_text(text: str, secrets: Iterable[str], min_run: int = MIN_RUN) -> str:
    """``text`` with every secret and every run of ``min_run``+ characters of one replaced by ``***``."""
    spans = secret_spans(text, secrets, min_run)
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out.append(text[pos:start])
        out.append(REDACTED)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def link_without_secrets(link: str, secrets: Iterable[str] = ()) -> str:
    """A link kept to be followed (a feed entry's): without its own credentials and secret parameters
    (``link_without_credentials``), and with each run of ``MIN_RUN``+ characters of ``secrets`` (the secrets of
    the URL it came from: a private feed copies its token into its entries' links) ``***``. A shorter secret is
    not looked for: it would shred the link's words."""
    return redact_text(link_without_credentials(link), [one for one in secrets if len(one) >= MIN_RUN])


def url_key(url: str) -> str:
    """A name for ``url`` to key stored state by: the URL itself when it holds no secret, else the URL without
    its secrets and a short hash of the whole (two feeds that differ only in their tokens stay apart)."""
    shown = url_without_secrets(url)
    if shown == url:
        return url
    return f"{shown} [{hashlib.sha256(url.encode('utf-8')).hexdigest()[:8]}]"
