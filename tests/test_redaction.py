"""Secret redaction: whole secrets and any run of 8+ of their characters (assistant_framework/redaction.py)."""

from __future__ import annotations

import json

from assistant_framework.redaction import redact_text
from assistant_framework.traces import redact_json_text, redact_secrets

KEY = "sk-proj-Abc123XyZ987-secretvalue"


def test_whole_cut_and_sliced_secrets_are_redacted():
    assert redact_text(f"key {KEY} refused", [KEY]) == "key *** refused"
    assert redact_text(f"key {KEY[:-4]}… refused", [KEY]) == "key ***… refused"  # minus its last characters
    assert redact_text(f"fragment <{KEY[9:17]}>", [KEY]) == "fragment <***>"  # exactly 8 from the middle
    masked = f"a {KEY[:10]}****{KEY[-10:]} b"  # a key shown masked in the middle: both ends are runs
    assert redact_text(masked, [KEY]) == "a ***" + "****" + "*** b"


def test_runs_shorter_than_eight_and_short_secrets_stay_readable():
    assert redact_text(f"prefix {KEY[:7]} only", [KEY]) == f"prefix {KEY[:7]} only"
    assert redact_text("hunter2 and hunter", ["hunter2"]) == "*** and hunter"  # short: whole only
    assert redact_text("nothing secret here", [KEY, ""]) == "nothing secret here"


def test_traces_redact_pieces_in_values_and_json_text():
    value = {"error": f"bad key {KEY[:-3]}", "list": [f"x{KEY[5:20]}y"]}
    assert redact_secrets(value, [KEY]) == {"error": "bad key ***", "list": ["x***y"]}
    assert json.loads(redact_json_text(json.dumps(value), [KEY])) == {"error": "bad key ***", "list": ["x***y"]}


def _spans_of_every_window(text: str, secrets: list[str], width: int = 8) -> list[tuple[int, int]]:
    """What ``secret_spans`` finds, the plain way: every window of every secret searched, the spans merged."""
    found = []
    for secret in secrets:
        size = min(len(secret), width)
        for i in range(len(secret) - size + 1):
            start = text.find(secret[i : i + size])
            while start != -1:
                found.append((start, start + size))
                start = text.find(secret[i : i + size], start + 1)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def test_a_text_without_a_piece_of_a_secret_is_searched_for_the_pieces_only_and_spans_stay_exact():
    """Redaction looks for a secret's 4-character pieces first (a trace or a log line that holds no secret needs no
    more than those), and still finds every run of 8+ of its characters: the same spans as searching every window."""
    import random

    from assistant_framework import redaction

    token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
    assert list(redaction._window_starts("a trace of 2026-12-04 with no key in it", token, 8)) == []
    rng = random.Random(7)
    for _ in range(2000):
        secrets = ["".join(rng.choice("abAB12:-") for _ in range(rng.randint(1, 30))) for _ in range(rng.randint(1, 3))]
        pieces = [rng.choice(secrets)[rng.randint(0, 10) :][: rng.randint(0, 14)] for _ in range(rng.randint(0, 6))]
        text = "".join(rng.choice(["x", " ", "1", *pieces]) for _ in range(rng.randint(0, 30)))
        assert redaction.secret_spans(text, secrets) == _spans_of_every_window(text, secrets), (text, secrets)
