"""Token counts estimated without a model's vocabulary: one rule for the prompt's section sizes, the history
budget in tokens, and the spending caps' estimate of a call (``assistant_framework/spending/``)."""

from __future__ import annotations

#: ASCII characters per token (English prose and code tokenize at about four).
CHARS_PER_TOKEN = 4
#: Other characters per token: non-Latin scripts tokenize at one to two characters a token.
NON_ASCII_CHARS_PER_TOKEN = 1.5


def estimate_tokens(text: str) -> int:
    """Rough token count without a vocabulary: ~4 characters a token, non-ASCII counted heavier."""
    if not text:
        return 0
    # Counted in C: the characters an ASCII encoding drops are the non-ASCII ones.
    non_ascii = 0 if text.isascii() else len(text) - len(text.encode("ascii", "ignore"))
    return max(1, round((len(text) - non_ascii) / CHARS_PER_TOKEN + non_ascii / NON_ASCII_CHARS_PER_TOKEN))
