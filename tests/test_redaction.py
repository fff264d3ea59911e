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
