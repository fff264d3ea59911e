"""An ideal model for the built-in eval cases, as a handler of the fake chat server.

``ideal_handler(cases)`` answers each case the way a model that chooses and fills calls perfectly
would: the calls of ``IDEAL[case id]`` one round at a time, then the reply. It speaks both
protocols: with the direct one a whole call (``{"skill", "args"}``), with ``skill_choice:
two_step`` the skill's name first and its arguments when asked. So the eval against it measures
the framework (prompt, protocol, loop, skills, scoring), not a model: a case it fails is a case
no model can pass. Usage::

    server.set_handler(ideal_handler(load_cases([BUILTIN_CASES_DIR])))
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

from assistant_framework.evals.cases import EvalCase
from messaging_llm_bot.protocol.messages import ARGS_REQUEST_LEAD

Call = tuple[str, dict]

#: case id -> (calls in order, final reply). The eval clock is Wednesday 2026-06-10 10:00.
IDEAL: dict[str, tuple[list[Call], str]] = {
    # chains.yaml
    "chain-search-then-read": ([("notes", {"action": "search", "query": "boiler"})], "Service: call 0800 555 0199."),
    "chain-list-then-read": (
        [("file", {"action": "list", "path": "notes"}), ("file", {"action": "read", "path": "notes/recipe-bread.md"})],
        "Bake it 40 minutes at 220 C.",
    ),
    "chain-contact-then-note": (
        [
            ("contacts", {"action": "find", "name": "Tom"}),
            ("notes", {"action": "add", "title": "Emergency numbers", "body": "Tom Becker: +49 151 2345678"}),
        ],
        "Saved Tom's number in the note Emergency numbers.",
    ),
    "chain-task-from-note": (
        [
            ("file", {"action": "read", "path": "notes/car.md"}),
            ("tasks", {"action": "add", "title": "Change to summer tyres", "due": "2026-06-12"}),
        ],
        "Added the task to change to summer tyres, due Friday.",
    ),
    "chain-complete-and-list": (
        [("tasks", {"action": "complete", "title": "Buy stamps"}), ("tasks", {"action": "list", "status": "open"})],
        "Done. Still open: Fix the fence.",
    ),
    "chain-birthday-reminder": (
        [
            ("birthdays", {"action": "find", "name": "Mia"}),
            ("reminders", {"action": "add", "text": "Call Mia: her birthday", "at": "2026-06-20 09:00"}),
        ],
        "Mia's birthday is June 20; I will remind you at 09:00 that day.",
    ),
    # memory.yaml
    "memory-past-chat": (
        [("conversation_search", {"query": "wedding"})],
        "You said your sister Lena marries on 22 August in Porto.",
    ),
    "memory-mail-from-collector": (
        [("memory_search", {"query": "heating"})],
        "Yes: the technician checks the heating on Friday 12 June between 9 and 11.",
    ),
    "memory-note-by-topic": (
        [("memory_search", {"query": "passport renewal"})],
        "Renewal appointment on 2026-07-03; bring two photos.",
    ),
    "memory-conversation-by-date": (
        [("conversation_search", {"query": "garden", "since": "2026-06-01", "until": "2026-06-01"})],
        "We planned the garden: tomatoes along the fence, basil in pots.",
    ),
    # no_skill.yaml
    "chat-greeting": ([], "I'm well, thank you! How can I help?"),
    "chat-thanks": ([], "You're welcome!"),
    "chat-joke": ([], "Why did the cat sit on the computer? To keep an eye on the mouse."),
    "chat-general-knowledge": ([], "Canberra."),
    "chat-math": ([], "17 times 3 is 51."),
    "chat-translate": ([], "Buenos días."),
    "chat-json-content": ([], '{"name": "Ann", "phone": "555-0100"}'),
    "chat-json-action-content": ([], '{"action": "buy", "item": "apples"}'),
    "chat-explain-remember": ([], "I keep notes, facts and learnings as files and search them when I need them."),
    "chat-time-from-prompt": ([], "It is 2026."),
    "chat-weekday-from-prompt": ([], "Today is Wednesday."),
    "chat-learning-in-prompt": ([], "You prefer metric units."),
    "chat-advice": ([], "Keep regular hours, and no screens in the hour before bed."),
    "chat-code": ([], "s[::-1]"),
    # notes_and_files.yaml
    "notes-add-groceries": (
        [("notes", {"action": "add", "title": "Groceries", "body": "eggs, milk, rye bread"})],
        "Saved.",
    ),
    "notes-add-idea": (
        [("notes", {"action": "add", "title": "Garage door", "body": "The code is changing to a keypad next month."})],
        "Noted.",
    ),
    "notes-search": ([("notes", {"action": "search", "query": "dentist"})], "Dr. Weber, Tuesdays only."),
    "notes-read": ([("notes", {"action": "read", "title": "Packing list"})], "A charger and your passport."),
    "notes-list": ([("notes", {"action": "list"})], "Two notes: Recipes and Car."),
    "file-read-path": ([("file", {"action": "read", "path": "notes/groceries.md"})], "Oat milk and tomatoes."),
    "file-write": (
        [("file", {"action": "write", "path": "notes/wifi.md", "content": "Guest network is 'Birch'."})],
        "Written.",
    ),
    "file-list": ([("file", {"action": "list", "path": "notes"})], "one.md and two.md."),
    "file-append": (
        [("file", {"action": "append", "path": "notes/groceries.md", "content": "- batteries\n"})],
        "Appended.",
    ),
    "file-read-several": (
        [("file", {"action": "read", "paths": ["notes/a.md", "notes/b.md"]})],
        "b.md mentions the boat.",
    ),
    "file-delete": ([("file", {"action": "delete", "path": "notes/old-draft.md"})], "Deleted."),
    # people_and_memory.yaml
    "contacts-add": (
        [
            (
                "contacts",
                {"action": "add", "name": "Priya Nair", "phone": "+44 7700 900123", "email": "priya@example.org"},
            )
        ],
        "Saved Priya.",
    ),
    "contacts-find": ([("contacts", {"action": "find", "name": "Tom"})], "Tom's number is +49 151 2345678."),
    "contacts-update": (
        [("contacts", {"action": "update", "name": "Tom Becker", "email": "tom.b@example.net"})],
        "Updated.",
    ),
    "birthdays-add": ([("birthdays", {"action": "add", "name": "Lena", "date": "03-14"})], "Saved."),
    "birthdays-add-year": ([("birthdays", {"action": "add", "name": "Grandpa Joe", "date": "1941-09-02"})], "Saved."),
    "birthdays-upcoming": ([("birthdays", {"action": "upcoming", "days": 31})], "Mia, on June 20."),
    "birthdays-find": ([("birthdays", {"action": "find", "name": "Ole"})], "Ole's birthday is on 11-02."),
    "routines-set": (
        [
            (
                "routines",
                {"action": "set", "name": "Morning", "when": "06:30", "steps": "stretch, coffee, read the news"},
            )
        ],
        "Saved.",
    ),
    "routines-list": ([("routines", {"action": "list"})], "Evening, at 21:00: tidy desk, plan tomorrow."),
    "facts-add-allergy": (
        [("facts", {"action": "add", "subject": "Anna", "attribute": "allergy", "value": "peanuts"})],
        "Stored.",
    ),
    "facts-add-structured": (
        [("facts", {"action": "add", "subject": "car", "attribute": "license plate", "value": "B-XY 1234"})],
        "Recorded.",
    ),
    "facts-lookup": ([("facts", {"action": "lookup", "subject": "Anna"})], "Anna is allergic to peanuts."),
    "learnings-remember-preference": (
        [("learnings", {"action": "remember", "text": "Prefers short answers without emojis"})],
        "Noted.",
    ),
    "learnings-remember-diet": ([("learnings", {"action": "remember", "text": "Is vegetarian"})], "Noted."),
    "learnings-list": ([("learnings", {"action": "list"})], "You prefer metric units."),
    "learnings-forget": ([("learnings", {"action": "forget", "text": "Prefers metric units"})], "Forgotten."),
    # tasks_and_reminders.yaml
    "tasks-add-plain": ([("tasks", {"action": "add", "title": "Renew the car insurance"})], "Added."),
    "tasks-add-due-friday": (
        [("tasks", {"action": "add", "title": "Call the plumber", "due": "2026-06-12"})],
        "Added.",
    ),
    "tasks-add-due-tomorrow": (
        [("tasks", {"action": "add", "title": "Send the invoice", "due": "2026-06-11"})],
        "Added.",
    ),
    "tasks-add-due-date": (
        [("tasks", {"action": "add", "title": "Submit the tax return", "due": "2026-07-31"})],
        "Added.",
    ),
    "tasks-list-open": ([("tasks", {"action": "list", "status": "open"})], "Buy stamps."),
    "tasks-list-due": ([("tasks", {"action": "list", "status": "due"})], "Pay rent, due yesterday."),
    "tasks-complete": ([("tasks", {"action": "complete", "title": "Buy stamps"})], "Marked done."),
    "tasks-delete": ([("tasks", {"action": "delete", "title": "Cancel gym membership"})], "Removed."),
    "reminders-in-minutes": (
        [("reminders", {"action": "add", "text": "Take the laundry out", "in_minutes": 20})],
        "I will remind you.",
    ),
    "reminders-at-time": (
        [("reminders", {"action": "add", "text": "Call mom", "at": "2026-06-10 18:30"})],
        "I will remind you.",
    ),
    "reminders-tomorrow-morning": (
        [("reminders", {"action": "add", "text": "Bring the parcel to the post office", "at": "2026-06-11 08:00"})],
        "I will remind you.",
    ),
    "reminders-in-two-hours": (
        [("reminders", {"action": "add", "text": "Check the oven", "in_minutes": 120})],
        "I will remind you.",
    ),
    "reminders-list": ([("reminders", {"action": "list"})], "Water the plants, at 17:00."),
    "time-now": ([("time", {"action": "now"})], "It is Wednesday 2026-06-10, 10:00."),
    "time-weekday": ([("time", {"action": "weekday", "date": "2026-12-24"})], "A Thursday."),
    "time-days-until": ([("time", {"action": "days_until", "date": "2026-07-01"})], "21 days."),
}

NOW_MARK = "\n\n[Now] "
TWO_STEP_MARK = '{"skill": "<skill name>"}\n'  # the two_step protocol text names the skill alone


def _turn_start(messages: list[dict]) -> int:
    """Index of this turn's user message (the last one carrying the [Now] line)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and NOW_MARK in str(message.get("content") or ""):
            return index
    return -1


def ideal_handler(cases: Iterable[EvalCase]) -> Callable[[dict], str]:
    """A fake-server handler answering each of ``cases`` (by its message) as ``IDEAL`` says."""
    by_message = {case.message: IDEAL[case.id] for case in cases if case.id in IDEAL}

    def handle(request: dict) -> str:
        messages = request.get("messages") or []
        start = _turn_start(messages)
        text = str(messages[start].get("content") or "").split(NOW_MARK, 1)[0] if start >= 0 else ""
        calls, reply = by_message.get(text, ([], "I do not know this case."))
        later = messages[start + 1 :]
        done = sum(1 for m in later if m.get("role") == "user" and not m["content"].startswith(ARGS_REQUEST_LEAD))
        last = str(messages[-1].get("content") or "")
        if done < len(calls):
            skill, args = calls[done]
            if last.startswith(ARGS_REQUEST_LEAD):
                return json.dumps(args)
            two_step = TWO_STEP_MARK in str(messages[0].get("content") or "")
            return json.dumps({"skill": skill} if two_step else {"skill": skill, "args": args})
        return json.dumps({"reply": reply})

    return handle
