"""L1: durable facts about the user, extracted from new turns by the model and merged via FactStore.

Runs in the memory worker after a reply has been sent. Output is JSON checked against
``FACTS_SCHEMA``; malformed output is logged and skipped. FactStore dedups, supersedes with
history, and never lets an extracted fact replace one the user stated. Facts from exchanges
with outside content (an untrusted turn) are extracted in their own call and stored marked
``"untrusted": true``, so recall treats them as outside content and the profile leaves them out.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import TypedDict

from ..json_types import JsonSchema
from ..stores.facts import FactStore
from ..stores.records import Fact
from ..workspace import Workspace
from .modelcall import Complete, Messages, call_model, json_schema_format, parse_json_reply

log = logging.getLogger(__name__)
MAX_FACTS = 10
MAX_VALUE_CHARS = 300
#: A subject ("user", a name) or an attribute ("favourite drink") longer than this is no fact.
MAX_KEY_CHARS = 100

FACTS_SCHEMA: JsonSchema = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 20,
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string", "minLength": 1},
                    "attribute": {"type": "string", "minLength": 1},
                    "value": {"type": "string", "minLength": 1},
                },
                "required": ["subject", "attribute", "value"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}


class ExtractedFact(TypedDict):
    """One fact of the model's answer, as ``FACTS_SCHEMA`` checked it."""

    subject: str
    attribute: str
    value: str


EXTRACTION_PROMPT = (
    "You extract durable facts and preferences about the user from a chat exchange, for the "
    "assistant's long-term memory. Keep only things likely to stay true for weeks: names, "
    "relationships, places, preferences, habits, plans with dates, important events. Skip "
    "small talk, one-off requests, anything about the assistant, and secrets (passwords, "
    'tokens, card numbers). Use subject "user" for the user, or the person\'s name. '
    'Answer only with JSON: {"facts": [{"subject": "...", "attribute": "...", "value": "..."}]}; '
    'use {"facts": []} when there is nothing durable.'
)


def extraction_messages(user_text: str, reply: str, earlier: Sequence[tuple[str, str]] = ()) -> Messages:
    """The extraction request; ``earlier`` exchanges of the same batch come first."""
    pairs = [*earlier, (user_text, reply)]
    body = "\n\n---\n\n".join(f"User said:\n{u}\n\nAssistant replied:\n{r}" for u, r in pairs)
    return [
        {"role": "system", "content": EXTRACTION_PROMPT},
        {"role": "user", "content": body},
    ]


def _says_something(field: str) -> bool:
    """Whether an extracted field holds a letter or a digit (not "...", "-" or nothing)."""
    return any(char.isalnum() for char in field)


def extract_facts(
    complete: Complete, user_text: str, reply: str, earlier: Sequence[tuple[str, str]] = ()
) -> list[ExtractedFact]:
    """Ask the model for facts; [] when it answers nothing usable. Model failures raise."""
    text = call_model(
        complete, extraction_messages(user_text, reply, earlier), json_schema_format("facts", FACTS_SCHEMA)
    )
    parsed = parse_json_reply(text, FACTS_SCHEMA, "fact extraction")
    if parsed is None:
        return []
    # A small model copies the prompt's example: {"subject": "...", "attribute": "...", "value": "..."} was stored,
    # then recalled, listed on the web page and fed to the profile as a fact. A field without a letter or a digit
    # says nothing.
    said = [f for f in parsed["facts"] if all(_says_something(f[key]) for key in ("subject", "attribute", "value"))]
    facts = [
        f
        for f in said
        if len(f["value"]) <= MAX_VALUE_CHARS
        and len(f["subject"]) <= MAX_KEY_CHARS
        and len(f["attribute"]) <= MAX_KEY_CHARS
    ]
    if len(facts) < len(said):
        log.warning(
            "fact extraction: %d fact(s) with a field over %d/%d chars skipped",
            len(parsed["facts"]) - len(facts),
            MAX_KEY_CHARS,
            MAX_VALUE_CHARS,
        )
    return facts[:MAX_FACTS]


def extract_batch_and_store(
    workspace: Workspace,
    complete: Complete,
    conversation_id: str,
    pairs: list[tuple[str, str]],
    turn_ids: list[str],
    tz: tzinfo | None = None,
    *,
    untrusted: bool = False,
) -> list[tuple[Fact, str]]:
    """One extraction call for several (user text, reply) exchanges of one conversation;
    ``untrusted`` (outside content in any of them) stores every fact marked."""
    if not pairs:
        return []
    store = FactStore(workspace)
    store.all()  # a facts.json the owner broke raises here, before the model call: the batch waits for the fix
    facts = extract_facts(complete, pairs[-1][0], pairs[-1][1], list(pairs[:-1]))
    if not facts:
        return []
    ref = ",".join(turn_ids) if turn_ids else f"conversation:{conversation_id}"
    results = []
    for fact in facts:
        try:
            results.append(
                store.add(
                    fact["subject"],
                    fact["attribute"],
                    fact["value"],
                    source="extraction",
                    source_ref=ref,
                    time=datetime.now(tz),
                    untrusted=untrusted,
                )
            )
        except ValueError as exc:
            log.warning("fact extraction: fact skipped: %s", exc)
    return results
