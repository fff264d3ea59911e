"""Typed data stores shared by skills, the /now digest, the reminder scheduler and memory.

Each store keeps human-readable files the user may edit, written atomically through
the Workspace under a file lock. Lookups that find nothing raise ``NotFoundError``;
several matches raise ``AmbiguousError`` (both are ``LookupError``).
"""

from ._common import AmbiguousError, NotFoundError
from .facts import FACTS_FILE, FactStore
from .people import BIRTHDAYS_FILE, CONTACTS_FILE, BirthdayStore, ContactStore, next_occurrence, parse_birthday
from .reminders import REMINDERS_FILE, ReminderStore, due_at_of
from .tasks import TASKS_FILE, TaskStore, parse_due
from .texts import LEARNINGS_DIR, NOTES_DIR, ROUTINES_FILE, LearningStore, NoteStore, RoutineStore

__all__ = [
    "BIRTHDAYS_FILE",
    "CONTACTS_FILE",
    "FACTS_FILE",
    "LEARNINGS_DIR",
    "NOTES_DIR",
    "REMINDERS_FILE",
    "ROUTINES_FILE",
    "TASKS_FILE",
    "AmbiguousError",
    "BirthdayStore",
    "ContactStore",
    "FactStore",
    "LearningStore",
    "NotFoundError",
    "NoteStore",
    "ReminderStore",
    "RoutineStore",
    "TaskStore",
    "due_at_of",
    "next_occurrence",
    "parse_birthday",
    "parse_due",
]
