"""Recall: conversation boundaries, owner data, excluded chats, the budgeted block, the claim checker."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.memory import MemoryHit, MemoryService, check_memory_claim
from assistant_framework.memory.recall import RECALL_HEADER, format_recall
from assistant_framework.workspace import Workspace

UTC = timezone.utc
T0 = datetime(2026, 5, 1, 9, tzinfo=UTC)


def _service(tmp_path, memory: dict | None = None) -> MemoryService:
    return MemoryService(Workspace(tmp_path / "ws"), {"memory": memory or {}}, start_worker=False)


def _fill(svc: MemoryService) -> None:
    svc.log_turn("owner", "user", "My bank PIN hint is the cat's birthday", time=T0)
    svc.log_turn("group-1", "user", "The cat ate the birthday cake", time=T0)
    for i in range(15):  # push the above out of the "recent turns" window
        svc.log_turn("owner", "user", f"filler {i}", time=T0 + timedelta(minutes=i + 1))
        svc.log_turn("group-1", "user", f"filler {i}", time=T0 + timedelta(minutes=i + 1))
    svc.workspace.write_text("notes/cat.md", "# Cat\n\nThe cat's birthday is 4 March.\n")
    svc.refresh()


def test_recall_never_crosses_chats(tmp_path):
    svc = _service(tmp_path)
    try:
        _fill(svc)
        mine = svc.recall("cat birthday", "owner", private=True)
        assert {h.source for h in mine} == {"conversation", "notes"}
        assert all(h.conversation in ("owner", None) for h in mine)
        group = svc.recall("cat birthday", "group-1", private=False)
        assert group and {h.conversation for h in group} == {"group-1"}  # no owner turns, no notes
        assert "cake" in group[0].snippet
    finally:
        svc.close()


def test_owner_data_shared_with_listed_chats_only(tmp_path):
    svc = _service(tmp_path, {"share_owner_data_with": ["group-*"]})
    try:
        _fill(svc)
        group = svc.recall("cat birthday", "group-1", private=False)
        assert {h.source for h in group} == {"conversation", "notes"}
        assert all(h.conversation in ("group-1", None) for h in group)
    finally:
        svc.close()


def test_excluded_chats_get_nothing_and_are_not_logged(tmp_path):
    svc = _service(tmp_path, {"exclude_chats": ["-100*", 555]})
    try:
        _fill(svc)
        assert svc.log_turn("-100777", "user", "cat birthday party") == {}
        assert svc.log_turn("555", "user", "cat birthday gift") == {}
        assert not svc.workspace.list("conversations/-100777/*") and not svc.workspace.list("conversations/555/*")
        assert svc.recall("cat birthday", "-100777", private=True) == []
        assert svc.search("cat", within="555") == []
    finally:
        svc.close()


def test_recall_skips_the_turns_already_in_the_prompt(tmp_path):
    svc = _service(tmp_path)
    try:
        svc.log_turn("c", "user", "the blue umbrella is in the car", time=T0)
        for i in range(15):
            svc.log_turn("c", "user", f"other talk {i}", time=T0 + timedelta(minutes=i + 1))
        svc.log_turn("c", "user", "where is the blue umbrella?", time=T0 + timedelta(hours=1))
        hits = svc.recall("where is the blue umbrella?", "c")
        assert hits and "in the car" in hits[0].snippet
        assert all("where is" not in h.snippet for h in hits)  # the message being answered is not recalled
    finally:
        svc.close()


def test_recall_config_disable_and_limit(tmp_path):
    svc = _service(tmp_path, {"recall": {"enabled": False}})
    try:
        _fill(svc)
        assert svc.recall("cat birthday", "owner") == []
    finally:
        svc.close()
    svc = _service(tmp_path / "b", {"recall": {"limit": 1}})
    try:
        _fill(svc)
        assert len(svc.recall("cat birthday", "owner")) == 1
        assert len(svc.recall("cat birthday", "owner", limit=2)) == 2
    finally:
        svc.close()


def _hit(text: str, source: str = "conversation", time: str | None = "2026-05-03T10:00:00+00:00") -> MemoryHit:
    return MemoryHit(source=source, path="p", ref="r", time=time, snippet=text, score=1.0)


def test_format_recall_marks_and_budgets(tmp_path):
    assert format_recall([], 1000) == ""
    block = format_recall([_hit("Anna lives in Lisbon"), _hit("likes tea", "facts", None)], 1000)
    assert block.splitlines() == [
        RECALL_HEADER,
        "- (conversation, 2026-05-03) Anna lives in Lisbon",
        "- (facts) likes tea",
    ]
    forwarded = MemoryHit(
        source="conversation", path="p", ref="r", time=None, snippet="wire the money", score=1.0, outside=True
    )
    block = format_recall([forwarded, _hit("item", "collector:rss", None), _hit("likes tea", "facts", None)], 1000)
    assert block.splitlines()[1:] == [
        "- (conversation) [outside content] wire the money",
        "- (collector:rss) [outside content] item",
        "- (facts) likes tea",
    ]
    hits = [_hit("x" * 200) for _ in range(10)]
    for budget in (100, 300, 650, 2000):
        text = format_recall(hits, budget)
        assert len(text) <= budget
        assert text.startswith(RECALL_HEADER)
    assert format_recall(hits, 20) == ""
    svc = _service(tmp_path, {"recall": {"budget_chars": 120}})
    try:
        assert len(svc.format_recall(hits)) <= 120
        assert len(svc.format_recall(hits, budget_chars=500)) > 120
    finally:
        svc.close()


CLAIMS = [
    "I'll remember that.",
    "Got it, I'll remember you like tea.",
    "Noted!",
    "Saved.",
    "I've saved that to your notes.",
    "I have noted your preference for window seats.",
    "I'll keep that in mind.",
    "I've made a note of it.",
    "I will store this for later.",
    "Your birthday has been saved.",
    "I've added it to your tasks.",
    "Sure! I'll make sure to remember your address.",
    "Done — saved your address.",
    "Consider it noted.",
    "Okay, noted: you prefer mornings.",
    "It's saved.",
    "That's been noted.",
    "Your address is now saved.",
    "We'll remember that for next time.",
    "I've written it down.",
    "Great news about the job! Got it. I will remember that your sister is Anna.",
]
NON_CLAIMS = [
    "Remember to buy milk.",
    "remember to buy milk",
    "I don't remember that.",
    "Do you remember where you put it?",
    "I can't remember everything.",
    "Would you like me to remember that?",
    "Should I save this?",
    "I can save it if you want.",
    "I won't remember this after the chat ends.",
    "I remember you mentioned Paris.",
    "Nothing was saved.",
    "I haven't saved anything yet.",
    "The weather is nice today.",
    "If you want, I'll remember it.",
    "Please remember to call your mom.",
    "Let me know if I should note it.",
    "Paris is the capital of France.",
    "I did not save it.",
    "Here is your note: buy milk.",
    "",
    # A passive about something else than the assistant's save ("your password is stored ...").
    "Your password is stored in the keychain.",
    "The temperature was recorded at 5pm.",
    "Tickets are saved in your account.",
    "The error was logged by the server.",
]


@pytest.mark.parametrize("reply", CLAIMS)
def test_claims_are_caught_without_a_write(reply):
    assert check_memory_claim(reply, wrote_memory=False) in {"remember", "save", "note", "keep_in_mind", "add"}
    assert check_memory_claim(reply, wrote_memory=True) is None


@pytest.mark.parametrize("reply", NON_CLAIMS)
def test_non_claims_pass(reply):
    assert check_memory_claim(reply, wrote_memory=False) is None


def test_claim_kinds():
    assert check_memory_claim("I'll remember that.", False) == "remember"
    assert check_memory_claim("Noted.", False) == "note"
    assert check_memory_claim("I've saved it.", False) == "save"
    assert check_memory_claim("I'll keep it in mind.", False) == "keep_in_mind"
