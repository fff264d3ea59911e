"""The call the gate checks is the call that runs (issue 26.1): a skill call is prepared once (coerced,
fitted to the schema's types, validated) and the policy gate, the owner's question, the audit line,
the repeat check and the run all use that prepared call, in the turn's workspace area. A call whose
arguments need fitting ("15" for an integer, 5 for a string) must not slip past any of them.

The real bot (python-telegram-bot against the fake Bot API, and the Signal service against the fake
daemon), the fake model server, real skills and files."""

from __future__ import annotations

import json

import pytest

from assistant_framework.access import guest_area
from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.agent.incoming import AgentMessage
from tests.signal_harness import FRIEND as SIGNAL_FRIEND
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.telegram_harness import OWNER, texts

FRIEND = 42
NOTE = "# Private\nthe owner's note\n"


def call(skill: str, **args) -> str:
    return json.dumps({"skill": skill, "args": args})


def audit(workspace) -> list[dict]:
    return workspace.read_jsonl("state/audit.jsonl") if workspace.exists("state/audit.jsonl") else []


def ask_model(fake, chat_server, text: str, *answers: str, user_id: int = OWNER, reply: str = "finished") -> None:
    chat_server.enqueue(*answers, json.dumps({"reply": reply}))
    fake.send_message(text, user_id=user_id)
    fake.wait_for(lambda: any(reply in t for t in texts(fake, user_id)), timeout=15)


# -- (a) a denied skill stays denied when its arguments need fitting -----------------------------------

#: (policy, call) pairs: each call needs a type fitted ("15" -> 15, 5 -> "5") and the policy denies it.
DENIED = {
    "skill rule, integer as text": (
        {"skills": {"reminders": "deny"}},
        call("reminders", action="add", text="water the plants", in_minutes="15"),
    ),
    "capability rule, number for a string": (
        {"capabilities": {"write": "deny"}},
        call("file", action="write", path="notes/fitted.md", content=12345),
    ),
    "skill rule, integer-valued float": (
        {"skills": {"reminders": "deny"}},
        call("reminders", action="add", text="water the plants", in_minutes=15.0),
    ),
}


@pytest.mark.parametrize("policy,denied", DENIED.values(), ids=DENIED.keys())
def test_a_denied_call_whose_arguments_need_fitting_does_not_run(
    fake, start_bot, chat_server, workspace, policy, denied
):
    start_bot(config_patch=lambda c: c.update(policy=policy))
    ask_model(fake, chat_server, "do it", denied)
    assert ReminderStore(workspace).list() == [] and not workspace.exists("notes/fitted.md")
    fed_back = chat_server.chat_requests[1]["messages"][-1]["content"]
    assert "policy does not allow" in fed_back
    # The audit line records the call as the gate saw it: the fitted arguments, denied.
    [line] = audit(workspace)
    assert line["decision"] == "deny" and line["outcome"] == "denied"
    assert line["args"].get("in_minutes", 15) == 15 and line["args"].get("content", "12345") == "12345"


def test_an_allowed_call_whose_arguments_need_fitting_runs_once_and_is_audited(fake, start_bot, chat_server, workspace):
    """The control: the same fitted call under the default policy runs, and its audit line says so."""
    start_bot()
    ask_model(fake, chat_server, "note it", call("file", action="write", path="notes/fitted.md", content=12345))
    assert workspace.read_text("notes/fitted.md") == "12345"
    [line] = audit(workspace)
    assert (line["decision"], line["outcome"], line["args"]["content"]) == ("allow", "ok", "12345")


def test_a_call_that_cannot_be_fitted_is_fed_back_and_nothing_runs(fake, start_bot, chat_server, workspace):
    workspace.write_text("notes/private.md", NOTE)
    start_bot(config_patch=lambda c: c.update(policy={"capabilities": {"delete": "allow"}}))
    ask_model(fake, chat_server, "delete", call("file", action="delete", path="notes/private.md", content=[1]))
    assert workspace.read_text("notes/private.md") == NOTE
    assert "was not run" in chat_server.chat_requests[1]["messages"][-1]["content"]
    assert audit(workspace) == []


# -- (b) a guest's call runs in the guest's area, with the arguments fitted ---------------------------


def DELETES_ALLOWED(config: dict) -> None:
    config["policy"] = {"capabilities": {"delete": "allow"}}


def test_a_guest_delete_with_an_extra_argument_to_fit_never_touches_the_owner(fake, start_bot, chat_server, workspace):
    workspace.write_text("notes/private.md", NOTE)
    # Deletes allowed without a question: the guest's delete runs, so where it runs is what is tested.
    start_bot(allowed_user_ids=[OWNER, FRIEND], owner_id=OWNER, config_patch=DELETES_ALLOWED)
    area = guest_area(f"tg:{FRIEND}")
    ask_model(
        fake,
        chat_server,
        "delete the private note",
        # "content" is one argument too many for a delete, and a number where the schema says string.
        call("file", action="delete", path="notes/private.md", content=5),
        # A guest's write with a value to fit lands in the guest's own area.
        call("file", action="write", path="notes/mine.md", content=7),
        user_id=FRIEND,
    )
    assert workspace.read_text("notes/private.md") == NOTE
    assert not workspace.exists("notes/mine.md") and workspace.read_text(f"{area}/notes/mine.md") == "7"
    fed_back = chat_server.chat_requests[1]["messages"][-1]["content"]
    assert "Error:" in fed_back and "notes/private.md" in fed_back  # ran, in the guest's empty area


def test_a_signal_guest_call_with_a_value_to_fit_runs_in_the_guest_area(start, daemon, chat_server, workspace):
    """The same on the Signal frontend's guest path."""
    workspace.write_text("notes/private.md", NOTE)
    chat_server.enqueue(
        call("file", action="delete", path="notes/private.md", content=5),
        call("file", action="write", path="notes/mine.md", content=7),
        '{"reply": "finished"}',
    )
    start(patch=DELETES_ALLOWED, owner=SIGNAL_OWNER)
    daemon.message(SIGNAL_FRIEND, "delete the private note")
    [sent] = daemon.wait_sent(1)
    assert sent["message"].startswith("finished")
    assert workspace.read_text("notes/private.md") == NOTE and not workspace.exists("notes/mine.md")
    written = [p for p in workspace.root.glob("guests/*/notes/mine.md")]
    assert [p.read_text() for p in written] == ["7"]


# -- (c) the repeat check keys the prepared call ------------------------------------------------------


@pytest.mark.parametrize(
    "first,second",
    [("15", 15), (15, "15"), ("15", " 15 ")],
    ids=["text-then-integer", "integer-then-text", "text-then-spaced-text"],
)
def test_a_reminder_asked_twice_in_two_spellings_is_stored_once(fake, start_bot, chat_server, workspace, first, second):
    start_bot()
    ask_model(
        fake,
        chat_server,
        "remind me in 15 minutes to water the plants",
        call("reminders", action="add", text="water the plants", in_minutes=first),
        call("reminders", action="add", text="water the plants", in_minutes=second),
    )
    stored = ReminderStore(workspace).list()
    assert [r["text"] for r in stored] == ["water the plants"]
    assert "Not run again" in chat_server.chat_requests[2]["messages"][-1]["content"]
    # The first answer told the model the reminder was set (not "was not run").
    assert "reminder r" in chat_server.chat_requests[1]["messages"][-1]["content"]


# -- nothing between the check and the run can change the call ----------------------------------------


def test_what_the_owner_is_asked_about_cannot_change_the_call_that_runs(bot_config, workspace, chat_server, make_agent):
    """A confirmation path that edits the request it is shown (a frontend bug, a plugin) changes nothing:
    the call that runs is the prepared one, and the question shows the action and path before a long text."""

    workspace.write_text("notes/keep.md", NOTE)
    agent = make_agent(bot_config, workspace)
    shown: list[list[str]] = []

    def approve(request: dict) -> bool:
        shown.append(list(request["args"]))
        request["args"]["path"] = "notes/keep.md"
        request["args"]["paths"] = ["notes/keep.md"]
        return True

    chat_server.enqueue(call("file", content="x" * 5000, action="delete", path="notes/other.md"), '{"reply": "ok"}')
    result = agent.handle(AgentMessage("c1", "delete notes/other.md", approve=approve))
    assert shown == [["action", "path", "content"]]
    assert workspace.read_text("notes/keep.md") == NOTE
    assert "notes/other.md" in result.skill_calls[0].error  # it ran, on the path the gate checked
    assert workspace.read_jsonl("state/audit.jsonl")[-1]["args"]["path"] == "notes/other.md"


def test_the_question_shows_a_files_whole_path(bot_config, workspace, chat_server, make_agent):
    """A path padded past the question's old 240-character cut (``notes/a/../a/../…``) hid which file a delete
    removes: every argument is shown whole, so the owner is shown all of it."""
    workspace.write_text("notes/keep.md", NOTE)
    agent = make_agent(bot_config, workspace)
    shown: list[str] = []

    def approve(request: dict) -> bool:
        shown.append(request["args"]["path"])
        return False

    padded = "notes/" + "a/../" * 60 + "keep.md"
    chat_server.enqueue(call("file", action="delete", path=padded), '{"reply": "kept"}')
    agent.handle(AgentMessage("c1", "delete the old draft", approve=approve))
    assert shown == [padded] and workspace.read_text("notes/keep.md") == NOTE


def test_a_read_call_repeated_in_another_spelling_counts_as_repeated(bot_config, workspace, chat_server, make_agent):
    """The loop's own repeat check (a model asking the same again gets a reply-only request) keys the
    prepared call too: ``{"a": "2"}`` then ``{"a": 2}`` is the same call."""
    from messaging_llm_bot.llm.structured import REPLY_SCHEMA

    agent = make_agent(bot_config, workspace)
    chat_server.enqueue(call("add", a="2", b=3), call("add", a=2, b="3"), '{"reply": "5"}')
    assert agent.handle(AgentMessage("c1", "2+3?")).reply == "5"
    schemas = [r["response_format"]["json_schema"]["schema"] for r in chat_server.chat_requests]
    assert schemas[0] != REPLY_SCHEMA and schemas[1] != REPLY_SCHEMA and schemas[2] == REPLY_SCHEMA
