"""Choosing the skill before its arguments (a runner's ``skill_choice``), for small models.

``direct``: one answer holds the skill and its arguments, constrained by one schema that joins
every skill's argument schema. ``two_step``: the system prompt lists each skill with its
one-line description only; the first answer of a round is ``{"skill": "<name>"}`` (the name one
of an enum) or ``{"reply": ...}``; a chosen skill's arguments are then asked in a second request
that appends the choice and an arguments request (the skill's schema alone) to the first one, so
the provider's prompt cache reuses all of it. ``auto``: ``two_step`` when the model's name says it
has at most ``TWO_STEP_MAX_BILLIONS`` parameters (``smollm2-135m``, ``qwen2.5:1.5b``,
``Llama-3.2-3B``), ``direct`` otherwise, and always with native tool calls (they carry the name
and the arguments in one answer). Measured in docs/eval.md ("Choosing the skill").
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant_framework.memory.terms import or_terms, query_terms
from messaging_llm_bot.agent.prompt import without_examples
from messaging_llm_bot.llm.structured import REPLY_SCHEMA, args_grammar, choice_schema, schema_key
from messaging_llm_bot.llm.wire import JsonObject, Message
from messaging_llm_bot.protocol import ARGS_KEYS, ParsedOutput, SkillCall, args_request, loads_lenient, strip_think

if TYPE_CHECKING:
    from assistant_framework.skills import SkillManager

#: ``auto`` chooses two_step up to this size (billions of parameters, read from the model's name):
#: measured on SmolLM2-135M only (docs/eval.md); larger small models are unmeasured here.
TWO_STEP_MAX_BILLIONS = 1.0
#: The choice offers at most this many skills: the best matches of the message.
SHORTLIST = 3

# A size in a model name: "135m", "1.5b", "8x7b" (after a separator or the start, not inside a word).
_SIZE_RE = re.compile(r"(?<![a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([mb])(?![a-z0-9])", re.IGNORECASE)


def model_billions(model: str) -> float | None:
    """The parameter count a model name states, in billions (the largest one named), or None."""
    sizes = []
    for experts, number, unit in _SIZE_RE.findall(model or ""):
        size = float(number) * (int(experts) if experts else 1)
        sizes.append(size / 1000 if unit.lower() == "m" else size)
    return max(sizes) if sizes else None


def skill_choice(runner: object) -> str:
    """``direct`` or ``two_step`` for a runner (its ``skill_choice``, with ``auto`` resolved)."""
    if getattr(runner, "tool_transport", "json") != "json":
        return "direct"
    setting = getattr(runner, "skill_choice", "auto") or "auto"
    if setting != "auto":
        return setting
    size = model_billions(str(getattr(runner, "model", "")))
    return "two_step" if size is not None and size <= TWO_STEP_MAX_BILLIONS else "direct"


def chosen_skill(parsed: ParsedOutput, names: Collection[str]) -> str | None:
    """The skill a two_step answer names without arguments (``{"skill": "notes"}``, or with empty
    ``args``), else None: a reply, or a whole call the loop runs as it is."""
    if len(parsed.calls) != 1:
        return None
    call = parsed.calls[0]
    return call.skill if call.skill in names and call.args == {} and call.args_error is None else None


def call_from_args(skill: str, text: str) -> SkillCall:
    """The call a two_step round makes: ``skill`` with the arguments answered to the second request.

    A model that wraps them as a whole call (``{"skill": ..., "args": {...}}``) is read too; anything
    but one JSON object carries ``args_error``, which is fed back like any invalid call."""
    body, _ = strip_think(text or "")
    decoded = loads_lenient(body.strip())
    value = decoded[0] if decoded is not None else None
    if isinstance(value, dict) and value.get("skill") == skill:
        inner: object = next((value[k] for k in ARGS_KEYS if k in value), {})
        value = inner if isinstance(inner, dict) else value
    if not isinstance(value, dict):
        error = f"the arguments for '{skill}' were not one JSON object: {body.strip()[:80]!r}"
        return SkillCall(skill, {}, text, error)
    return SkillCall(skill, value, text)


@dataclass(frozen=True)
class ArgsStep:
    """The second request of a two_step round: the messages it appends and the schema it asks for."""

    messages: list[Message]
    schema: JsonObject


def shortlist(text: str, docs: list[tuple[str, str]], limit: int = SHORTLIST) -> list[str]:
    """The skills whose name or description shares a content word with ``text`` (Porter-stemmed,
    stopwords dropped), best BM25 match first, at most ``limit``; [] when none does."""
    terms = query_terms(text)
    if not terms or not docs:
        return []
    with sqlite3.connect(":memory:") as db:  # 13 rows: built per turn in well under a millisecond
        db.execute("CREATE VIRTUAL TABLE skills USING fts5(name, body, tokenize='porter unicode61')")
        db.executemany("INSERT INTO skills VALUES (?, ?)", docs)
        rows = db.execute(
            "SELECT name FROM skills WHERE skills MATCH ? ORDER BY bm25(skills), name LIMIT ?",
            ("{body}: (" + or_terms(terms) + ")", limit),
        ).fetchall()
    return [name for (name,) in rows]


class ChoiceFormats:
    """The choice schema and the per-skill argument requests of a skill set, built once per skill
    set (the same texts each time, so requests stay byte-stable)."""

    def __init__(self) -> None:
        self._cache: tuple[str, list[tuple[str, str]], dict[str, tuple[str, JsonObject]]] | None = None

    def _formats(self, skills: SkillManager) -> tuple[list[tuple[str, str]], dict[str, tuple[str, JsonObject]]]:
        loaded = [s for s in (skills.get(name) for name in skills.offered_names()) if s is not None]
        key = schema_key((s.name, s.description, s.args_schema) for s in loaded)
        cache = self._cache
        if cache is None or cache[0] != key:
            args = {}
            for s in loaded:
                shown = json.dumps(
                    without_examples(s.args_schema or {}), separators=(",", ":"), ensure_ascii=False, sort_keys=True
                )
                args[s.name] = (args_request(s.name, s.description, shown), args_grammar(s.args_schema))
            docs = [(s.name, f"{s.name.replace('_', ' ')} {s.description}") for s in loaded]
            cache = self._cache = (key, docs, args)  # one assignment: thread-safe
        return cache[1], cache[2]

    def choice(self, skills: SkillManager, text: str, offered: list[str] | None = None) -> JsonObject:
        """The schema of a round's first answer to the user's ``text``: one of the ``offered`` skills
        it matches (``shortlist``), or a reply; only a reply when it matches none. The prompt lists
        every skill, so it stays byte-stable; only the grammar narrows."""
        docs = [d for d in self._formats(skills)[0] if offered is None or d[0] in offered]
        names = shortlist(text, docs)
        return choice_schema(names) if names else REPLY_SCHEMA

    def args_step(self, skills: SkillManager, choice_text: str, skill: str) -> ArgsStep:
        """The messages and schema asking for ``skill``'s arguments after the answer ``choice_text``."""
        request, schema = self._formats(skills)[1][skill]
        return ArgsStep([{"role": "assistant", "content": choice_text}, {"role": "user", "content": request}], schema)
