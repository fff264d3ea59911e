"""Text the word index cannot split, for memory search (pure functions): CJK and the like.

The word index (``unicode61``) splits on spaces and punctuation, and Chinese, Japanese, Thai,
Lao, Khmer and Burmese have no spaces between words: a whole sentence becomes one token, so a
word inside it is never found. Emoji are no word characters at all, so they are never indexed.
Rows with such characters ("CJK" here, for short) are also kept in a trigram index; a query's
runs of them are looked up there as substrings (runs of one or two characters, the commonest
word length, by a scan of those rows only).
"""

from __future__ import annotations

import re

# Hiragana, Katakana, CJK ideographs (and extension A, compatibility), Hangul (syllables, jamo), half-width Katakana;
# Thai, Lao, Myanmar, Khmer; emoji (symbols and pictographs, dingbats, miscellaneous symbols).
_CJK = (
    "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f"
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
    "\U0001f300-\U0001faff\u2600-\u27bf"
)
_CJK_CHAR = re.compile(f"[{_CJK}]")
_CJK_RUN = re.compile(f"[{_CJK}]+")
#: A query run longer than this is looked up by its overlapping trigrams (any of them), not as one substring.
WHOLE_RUN_CHARS = 6
#: At most this many substrings (trigram index) and short pieces (scan) per query: the first ones.
MAX_SUBSTRINGS = 24
MAX_SHORT = 12


def has_cjk(text: str) -> bool:
    """True when ``text`` has at least one CJK character."""
    return bool(_CJK_CHAR.search(text or ""))


def cjk_pieces(query: str) -> tuple[list[str], list[str]]:
    """The query's CJK lookups: (substrings of 3+ characters for the trigram index, 1-2 character ones to scan for);
    at most MAX_SUBSTRINGS and MAX_SHORT of them, the first ones (a query of hundreds of short words
    would otherwise cost one scan of every CJK row each)."""
    runs = _CJK_RUN.findall(query or "")
    matches: list[str] = []
    short: list[str] = []
    for run in runs:
        if len(run) >= 3 and len(run) <= WHOLE_RUN_CHARS:
            matches.append(run)
        elif len(run) > WHOLE_RUN_CHARS:
            matches.extend(run[i : i + 3] for i in range(len(run) - 2))
        elif len(run) == 2 or len(runs) == 1:
            short.append(run)
    return list(dict.fromkeys(matches))[:MAX_SUBSTRINGS], list(dict.fromkeys(short))[:MAX_SHORT]


def fold_words(text: str) -> str:
    """Text as the word indexes hold it and queries look it up: ``ß`` and ``ẞ`` as ``ss``.

    ``unicode61`` folds case and accents (``Café`` finds ``cafe``) but keeps ``ß`` a letter of its
    own, so "Strasse" (as Swiss German and many keyboards write it) would miss "Straße"."""
    return text.replace("ß", "ss").replace("ẞ", "ss")
