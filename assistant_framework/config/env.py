"""Secrets in config: how they get in (``${VAR}`` references, ``TELEGRAM_BOT_TOKEN``) and how
they stay out of what is shown (``redact``; ``SECRET_KEY`` is shared with traces and the audit log).

A value is a secret by its key's name (``api_key``, ``Authorization``) or by what it looks like: a
URL's password or a query parameter named like a secret (``?api_key=``), or a long token-like string
under a key that names a key (``OPENAI_KEY``). ``value_secrets`` says which parts of one value are
secret; ``redact`` (what ``config show`` prints) and ``traces.collect_secrets`` (what logs and
traces hide) both ask it.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlsplit, urlunsplit

from assistant_framework.config.errors import ConfigError, JsonPath, LoadedConfig, _display, format_json_path

TOKEN_ENV = "TELEGRAM_BOT_TOKEN"
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
#: Config and argument keys whose values are secrets (shared by config show, traces and the audit log).
SECRET_KEY = re.compile(
    r"(token|api[_-]?key|password|passwd|passphrase|pwd|secret|credential|private[_-]?key|authorization|cookie)",
    re.IGNORECASE,
)
REDACTED = "***"
#: Query parameters whose values are secrets in a URL (feed tokens, signed links), beside ``SECRET_KEY``'s names.
_SECRET_PARAM = re.compile(r"^(key|auth|sig|signature|pass|passwd|session|sid|access|hash|code)$", re.IGNORECASE)
#: A key that names a key without saying "api key" (``OPENAI_KEY``, ``license-key``, ``key``): its value is a
#: secret when it looks like a token (``_TOKEN_LIKE``), not when it is a word or a setting.
_KEY_WORD = re.compile(r"(?:^|[^a-z0-9])(?:key|pat|auth)(?:$|[^a-z0-9])", re.IGNORECASE)
_TOKEN_LIKE = re.compile(r"^(?=[^\s]*[0-9])(?=[^\s]*[A-Za-z])[A-Za-z0-9_\-.+/=:~]{16,}$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def _substitute_env(value: Any, path: JsonPath, loaded: LoadedConfig) -> Any:
    if isinstance(value, dict):
        return {k: _substitute_env(v, (*path, k), loaded) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute_env(v, (*path, i), loaded) for i, v in enumerate(value)]
    if isinstance(value, str):
        match = _ENV_REF.match(value.strip())
        if match:
            name = match.group(1)
            if name not in os.environ:
                file, rel = loaded.source_of(path)
                raise ConfigError(f"{_display(file)}: {format_json_path(rel)}: environment variable {name} is not set")
            return os.environ[name]
    return value


def is_env_reference(value: object) -> bool:
    """Whether ``value`` is a ``"${NAME}"`` reference (left as it is when a config is read with ``env=False``)."""
    return isinstance(value, str) and _ENV_REF.match(value.strip()) is not None


def env_value(value: str) -> str:
    """The value as the running bot reads it: a ``"${NAME}"`` reference gives the variable's value ("" when it is
    not set), anything else is itself (setup, reading a config loaded with ``env=False``)."""
    match = _ENV_REF.match(value.strip())
    return os.environ.get(match.group(1), "") if match else value


def _secret_param(name: str) -> bool:
    return bool(SECRET_KEY.search(name) or _SECRET_PARAM.match(name))


def url_secrets(url: str) -> list[str]:
    """The secret parts of ``url``: a password in it (``user:pass@``), path segments that look like tokens
    (``looks_like_token``: a private podcast's ``/feed/<token>.rss``, ``/rss/<token>``) and the values of query
    parameters whose names look secret (``token``, ``api_key``, ``key``, ``sig``...)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL after all (a bad port, a stray bracket): nothing to find in it
        return []
    found = [password] if password else []
    found += [segment for segment in parts.path.split("/") if looks_like_token(segment)]
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if value and _secret_param(name):
            found.append(value)
    return found


def url_without_secrets(url: str) -> str:
    """``url`` as it may be shown, logged or stored: its secret parts (``url_secrets``) are ``***``."""
    if not url_secrets(url):
        return url
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password:
        netloc = f"{parts.username or ''}:{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    path = "/".join(REDACTED if looks_like_token(segment) else segment for segment in parts.path.split("/"))
    query = "&".join(
        f"{name}={REDACTED}" if value and _secret_param(name) else f"{name}={value}"
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


def link_without_credentials(link: str) -> str:
    """A link as it may be stored and shown, and still followed: its ``user:password@`` and the query (and
    fragment) parameters named like secrets (``?token=``, ``key``, ``auth``, ``sig``...) left out, the rest as it
    was, byte for byte. Unlike ``url_without_secrets`` a path segment is not judged by its looks: an article's
    slug (``how-to-use-python-3-12``) looks like a token and is none."""
    try:
        parts = urlsplit(link)
        netloc = parts.netloc.rpartition("@")[2]
    except ValueError:  # not a URL after all: nothing to leave out
        return link
    query, fragment = _without_secret_params(parts.query), _without_secret_params(parts.fragment)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return link  # nothing to leave out: not rebuilt, so not re-encoded either
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _without_secret_params(text: str) -> str:
    """``name=value&...`` without the pieces whose name looks secret and whose value is not empty; the other
    pieces as written (their encoding kept)."""
    pieces = text.split("&")
    kept = [piece for piece in pieces if not _secret_piece(piece)]
    return text if len(kept) == len(pieces) else "&".join(kept)


def _secret_piece(piece: str) -> bool:
    name, found, value = piece.partition("=")  # a value made ``***`` before (a feed's URL as shown) is none
    return bool(found and value) and value != REDACTED and _secret_param(unquote_plus(name))


def looks_like_token(text: str) -> bool:
    """True for a long run of letters and digits (16 or more, a digit among them), as tokens are; not for a word."""
    return bool(_TOKEN_LIKE.match(text))


def _key_names_a_secret(key: str) -> bool:
    return bool(key) and SECRET_KEY.search(key) is not None


def value_secrets(value: str, key: str = "") -> list[str]:
    """The secret parts of one string value under ``key``: the whole value when the key names a secret
    (``api_key``); the secrets a URL carries (its password, ``?api_key=``); the whole value when the key
    names a key and the value looks like a token (``OPENAI_KEY: sk-...``); else none."""
    if not value:
        return []
    if _key_names_a_secret(key):
        return [value]
    if _URL.match(value):
        return url_secrets(value)
    if key and _KEY_WORD.search(key) and _TOKEN_LIKE.match(value):
        return [value]
    return []


def redact(value: Any, key: str = "") -> Any:
    """A copy with secrets (tokens, keys, passwords, a URL's password or token) replaced by ``***``."""
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if isinstance(value, str) and value:
        found = value_secrets(value, key)
        if found == [value]:
            return REDACTED
        if found:
            return url_without_secrets(value)
    return value
