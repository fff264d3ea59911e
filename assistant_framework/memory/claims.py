"""Is the model claiming a save that never happened? ("I'll remember that", "Noted!", "Saved.")

Pure: ``check_memory_claim(reply, wrote_memory)`` returns None when the reply is fine, else
the kind of claim found ("remember", "save", "note", "keep_in_mind", "add"), so the loop
can perform the save or tell the user. Questions, offers, negations and recollections
("I remember you said...", "I don't remember") are not claims.
"""

from __future__ import annotations

import re

_AUX = r"(?:'ll|’ll| will|'ve|’ve| have| had| just| already|'m going to| am going to| shall)"
_ADVERB = r"(?:\s+(?:also|now|definitely|certainly|surely|gladly|make sure to|be sure to|go ahead and))*"
_VERBS = {
    "remember": r"remember(?:ed)?|memori[sz]e[d]?|commit(?:ted)? (?:it|that|this) to memory",
    "save": r"save[d]?|store[d]?|record(?:ed)?|log(?:ged)?|written (?:it|that|this) down|write (?:it|that|this) "
    r"down|wrote (?:it|that|this) down|jot(?:ted)? (?:it|that|this) down",
    "note": r"note[d]?|made a note|make a note|taken note|take note",
    "keep_in_mind": r"keep (?:it|that|this|them) in mind|kept (?:it|that|this) in mind",
    "add": r"added (?:it|that|this|them|your \w+)|add (?:it|that|this|them)",
}
_FIRST_PERSON = {
    kind: re.compile(r"\b(?:i|we)" + _AUX + r"?" + _ADVERB + r"\s+(?:" + verbs + r")\b", re.IGNORECASE)
    for kind, verbs in _VERBS.items()
}
# "I remember" alone is a recollection, not a save; it needs an auxiliary ("I'll remember").
_BARE_REMEMBER = re.compile(r"\b(?:i|we)" + _ADVERB + r"\s+remember\b", re.IGNORECASE)
# A passive claims a save when its subject is "it/that/this" ("It's saved") or it says the save
# just happened ("has been saved", "is now saved"); "your password is stored in the keychain" does not.
_PASSIVE = re.compile(
    r"(?:\b(?:it|that|this|everything|all)\s*(?:has|have|is|was|are|were|'s|’s)\s+(?:now\s+|been\s+|now been\s+)?"
    r"|\b(?:has|have|'s|’s)\s+(?:now\s+)?been\s+|\b(?:is|are|'s|’s)\s+now\s+)"
    r"(?P<verb>saved|noted|stored|recorded|remembered|logged)\b",
    re.IGNORECASE,
)
_INTERJECTION = re.compile(
    r"^\W*(?:got it|okay|ok|sure|done|alright|all "
    r"right|great|perfect)?[,!.\s—–-]*(?:duly\s+)?(?P<verb>noted|saved|stored|remembered|logged)\b",
    re.IGNORECASE,
)
_CONSIDER = re.compile(r"\bconsider it (?P<verb>noted|saved|done|remembered)\b", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:not|never|no|don't|don’t|do not|doesn't|didn't|did not|can't|can’t|cannot|couldn't|won't|won’t|"
    r"wasn't|isn't|haven't|hasn't|unable|nothing)\b",
    re.IGNORECASE,
)
_OFFER = re.compile(
    r"^\W*(?:if\b|would you like|do you want|want me to|should i|shall i|may i|can i|could i|i can\b|i could\b|"
    r"let me know|please\b|remember to\b|don't forget|try to\b)",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_PASSIVE_KIND = {
    "saved": "save",
    "stored": "save",
    "recorded": "save",
    "logged": "save",
    "noted": "note",
    "remembered": "remember",
    "done": "save",
}


def _sentence_claim(sentence: str) -> str | None:
    text = sentence.strip()
    if not text or text.endswith("?") or _OFFER.match(text):
        return None
    for kind, pattern in _FIRST_PERSON.items():
        match = pattern.search(text)
        if match and not _NEGATION.search(text[: match.end()]):
            if kind == "remember" and _BARE_REMEMBER.fullmatch(match.group(0)):
                continue
            return kind
    for pattern in (_INTERJECTION, _CONSIDER, _PASSIVE):
        match = pattern.search(text)
        if match and not _NEGATION.search(text[: match.end()]):
            return _PASSIVE_KIND.get(match.group("verb").lower(), "save")
    return None


def check_memory_claim(reply: str, wrote_memory: bool) -> str | None:
    """None when the reply is fine; else the kind of save it claims without a write this turn."""
    if wrote_memory or not reply:
        return None
    for sentence in _SENTENCE.findall(reply):
        kind = _sentence_claim(sentence)
        if kind:
            return kind
    return None
