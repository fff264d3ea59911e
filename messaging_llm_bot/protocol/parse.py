"""Reading one model output: skill calls (in order) or a final reply.

The model answers with one JSON object: ``{"skill": "<name>", "args": {...}}`` to call a
skill, or ``{"reply": "<text>"}`` (or plain text) to answer. Weak models drift, so the
parser recovers calls from fences, ``<tool_call>`` tags, surrounding prose, synonyms,
OpenAI shapes, JSON-string args, Python-literal / single-quoted / trailing-comma / commented JSON,
and arrays or runs of call objects, and a call missing only its last ``}``; the protocol's keys in
another letter case (``"Skill"``, ``"ARGS"``); also the text forms of chat templates (``templates.TEMPLATE_FORMS``
below: Mistral ``[TOOL_CALLS]name[ARGS]{...}``, Llama ``<function=name>{...}</function>``, Qwen3-Coder's
``<function=name><parameter=key>value</parameter></function>``, Kimi K2's ``<|tool_call_begin|>``,
DeepSeek's ``<｜tool▁call▁begin｜>``; Phi-4-mini's and Granite's ``<|tool_call|>[...]`` and Hermes'
``<tool_call>`` hold plain JSON; ``templates``) and an OpenAI-style ``functions.`` prefix on a known skill's name. A
leading ``<think>...</think>`` block is dropped.

When is a JSON object a call? (precision first: content must never run a skill)

1. It has an explicit skill key (``skill``/``tool``/``tool_name``/``action``/``function``)
   whose value is a name-like string (no spaces, <= 64 chars), and apart from one args key
   (``args``/``arguments``/``parameters``/``params``/``input``) and meta keys (``id``,
   ``type``, ``reason``, ``thought``...) it has no other keys. Unknown names still count,
   so the loop can answer "unknown skill, did you mean ...".
   With other keys too, it is a call only if the name is a known skill, or ``<known skill>.<action>``
   (the extra keys become the args when no args key is given: "flat_args").
2. ``function`` holding ``{"name", "arguments"}`` (OpenAI ``tool_calls`` entry shape).
3. ``name`` plus an args key and nothing else, where the name is a known skill or the
   args are an object (or a JSON string holding one).
4. ``name`` alone (plus meta keys) when its value is a known skill name; beside an ``action``
   that is no skill name, ``name`` (or ``function``) naming a known skill makes the action and the
   other keys (or the args object) that skill's args: skills take their sub-command as ``action``.
5. ``{"skill_call": {"name": ..., "args": {...}, "done": true}}``, the form of the system this
   project replaces (``done`` is dropped), when its body is a call by the rules above.

6. The answer must BE the calls (``framing.quoted_calls``): a short lead-in, short words between
   calls and one short sentence after them (on its own line, or starting anew on the call's line)
   are allowed; a call in quotation marks, on a ``>`` line, in a list item about it, amid longer
   prose or followed by more prose is quoted text, never run (in a guarded turn nothing but
   punctuation may follow it). Every call of the answer is checked: one quoted call makes the
   whole answer text.

So ``{"name": "Bob", "age": 3}``, ``{"notes": "..."}`` (one key named like a skill) and
``{"action": "buy", "price": 3}`` are content. An array is calls only if every element
is a call. Fenced blocks tagged with a language other than json (```python ...) are code
samples and never searched. ``{"reply": ...}`` (or a sole ``response``/``answer``/
``message`` key) is unwrapped only when that object is the whole output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TypeGuard

from assistant_framework.json_types import JsonObject
from assistant_framework.skills.spec import SkillArgs
from messaging_llm_bot.protocol.framing import quoted_calls
from messaging_llm_bot.protocol.lenient_json import (
    REPLY_PREFIX_RE,
    JsonCandidate,
    decode_partial_string,
    loads_lenient,
    open_region,
    scan,
    strip_think,
)
from messaging_llm_bot.protocol.templates import template_calls

SKILL_KEYS = ("skill", "tool", "tool_name", "action", "function")
ARGS_KEYS = ("args", "arguments", "parameters", "params", "input")
THOUGHT_KEYS = frozenset({"reason", "reasoning", "thought", "thoughts", "explanation"})
META_KEYS = THOUGHT_KEYS | {"id", "type", "call_id"}
REPLY_SYNONYMS = ("response", "answer", "message")
CALL_LIST_KEYS = ("tool_calls", "calls")
# The wrapper of the system this project replaces: {"skill_call": {"name", "args", "done"}}.
LEGACY_CALL_KEY = "skill_call"
# The start of a call object, for outputs cut off by max_tokens.
_CALL_PREFIX_RE = re.compile(
    r"\A\s*(?:```(?:json)?\s*\n)?\s*\{\s*[\"']?(?:skill|skill_call|tool|tool_name|function)[\"']?\s*:"
)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/\-]{0,63}")
#: The keys the protocol reads, matched in any letter case (``"Skill"``, ``"ARGS"``, ``"Name"``).
_PROTOCOL_KEYS = frozenset(
    {*SKILL_KEYS, *ARGS_KEYS, *META_KEYS, "name", "done", "reply", *REPLY_SYNONYMS, *CALL_LIST_KEYS, LEGACY_CALL_KEY}
)


@dataclass
class SkillCall:
    """One skill call read from model output; args_error is fed back to the model when set."""

    skill: str
    args: SkillArgs
    raw: str = ""
    args_error: str | None = None
    #: The size of arguments over the bound of a call (agent/answer_bounds.py): left out, the call not run.
    too_long: int | None = None


@dataclass
class ParsedOutput:
    """Calls (in order) or a reply; recovered names the drift forms that were repaired."""

    calls: list[SkillCall]
    reply: str | None
    recovered: list[str] = field(default_factory=list)


def _args_from(name: str, value: object) -> tuple[SkillArgs, str | None, list[str]]:
    """Normalise an args value to a dict; errors are returned for the model to fix."""
    if value is None:
        return {}, None, []
    if isinstance(value, dict):
        return value, None, []
    if isinstance(value, str):
        if not value.strip():
            return {}, None, ["args_string"]
        parsed = loads_lenient(value)
        if parsed is not None and parsed[0] is None:
            return {}, None, ["args_string"]  # "null": a skill that takes no arguments
        if parsed is not None and isinstance(parsed[0], str) and parsed[0].lstrip().startswith("{"):
            # encoded twice (Granite 4 on vLLM's hermes parser): the string holds the JSON text
            parsed = loads_lenient(parsed[0])
        if parsed is None:
            return {}, f"args for skill '{name}' are a string that is not valid JSON: {value[:80]!r}", []
        if not isinstance(parsed[0], dict):
            return {}, f"args for skill '{name}' must be a JSON object, the string holds {type(parsed[0]).__name__}", []
        return parsed[0], None, ["args_string"] + parsed[1]
    return {}, f"args for skill '{name}' must be a JSON object, got {type(value).__name__}", []


def _is_name(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _NAME_RE.fullmatch(value) is not None


def protocol_keys(obj: JsonObject) -> tuple[JsonObject, bool]:
    """``obj`` with the protocol's keys in lower case (``"Skill"`` -> ``skill``), other keys as written,
    and whether any key changed; an object that has one key in two spellings is left as it is."""
    renamed: JsonObject = {}
    changed = False
    for key, value in obj.items():
        low = key.lower() if isinstance(key, str) else key
        if low != key and low in _PROTOCOL_KEYS:
            if low in obj or low in renamed:
                return obj, False
            key, changed = low, True
        renamed[key] = value
    return renamed, changed


def _call_from_dict(obj: JsonObject, known: Collection[str], raw: str) -> tuple[SkillCall, list[str]] | None:
    """Apply the module docstring's rule to one object (its keys in any letter case); None when it is content."""
    obj, recased = protocol_keys(obj)
    if recased:
        found = _call_from_dict(obj, known, raw)
        return (found[0], ["key_case"] + found[1]) if found else None
    fn = obj.get("function")
    if isinstance(fn, dict) and set(obj) - {"function"} <= META_KEYS:
        inner = _call_from_dict(fn, known, raw) if "name" in fn else None
        if inner and set(fn) <= {"name", *ARGS_KEYS, *META_KEYS}:
            return inner[0], ["openai_function"] + inner[1]
        return None
    action_arg = _action_beside_known_name(obj, known, raw)
    if action_arg is not None:
        return action_arg
    skill_key = next((k for k in SKILL_KEYS if k in obj), None)
    args_key = next((k for k in ARGS_KEYS if k in obj), None)
    labels = [f"synonym:{args_key}"] if args_key not in (None, "args") else []
    if skill_key is not None:
        return _call_by_skill_key(obj, skill_key, args_key, labels, known, raw)
    return _call_by_name(obj, args_key, labels, known, raw)


def _call_by_skill_key(
    obj: JsonObject, skill_key: str, args_key: str | None, labels: list[str], known: Collection[str], raw: str
) -> tuple[SkillCall, list[str]] | None:
    """Rule 1: an object with an explicit skill key (``skill`` or a synonym)."""
    name = obj[skill_key]
    if not _is_name(name):
        return None
    if skill_key != "skill":
        labels = [f"synonym:{skill_key}", *labels]
    extras = set(obj) - {skill_key, args_key} - META_KEYS
    if extras and name not in known and name.partition(".")[0] not in known:  # "tasks.add" counts as tasks
        return None
    if extras and args_key is None:
        flat = {k: v for k, v in obj.items() if k != skill_key and k not in THOUGHT_KEYS}
        return SkillCall(name, flat, raw), [*labels, "flat_args"]
    args, err, more = _args_from(name, obj.get(args_key) if args_key else None)
    return SkillCall(name, args, raw, err), labels + more


def _call_by_name(
    obj: JsonObject, args_key: str | None, labels: list[str], known: Collection[str], raw: str
) -> tuple[SkillCall, list[str]] | None:
    """Rules 3 and 4: ``name`` with an args key, or a known skill's ``name`` alone."""
    name = obj.get("name")
    if not _is_name(name) or set(obj) - {"name", args_key} - META_KEYS:
        return None
    if args_key is None:
        return (SkillCall(name, {}, raw), ["synonym:name"]) if name in known else None
    args, err, more = _args_from(name, obj[args_key])
    if name not in known and (err or not isinstance(obj[args_key], (dict, str))):
        return None
    return SkillCall(name, args, raw, err), ["synonym:name", *labels, *more]


def _action_beside_known_name(
    obj: JsonObject, known: Collection[str], raw: str = ""
) -> tuple[SkillCall, list[str]] | None:
    """``{"name"|"function": "<known skill>", "action": "<not a skill>", ...}``: the action (and any
    other keys, or the args object) are that skill's arguments; None for any other object."""
    action = obj.get("action")
    if not isinstance(action, str) or action in known or any(k in obj for k in ("skill", "tool", "tool_name")):
        return None
    name_key = next((k for k in ("function", "name") if isinstance(obj.get(k), str) and obj[k] in known), None)
    if name_key is None:
        return None
    args_key = next((k for k in ARGS_KEYS if k in obj), None)
    labels = [f"synonym:{name_key}"] + ([f"synonym:{args_key}"] if args_key not in (None, "args") else [])
    if args_key is None:
        flat = {k: v for k, v in obj.items() if k != name_key and k not in THOUGHT_KEYS}
        return SkillCall(obj[name_key], flat, raw), [*labels, "flat_args"]
    if set(obj) - {name_key, "action", args_key} - META_KEYS:
        return None
    args, err, more = _args_from(obj[name_key], obj[args_key])
    if err is None and "action" not in args:
        args = {"action": action, **args}
    return SkillCall(obj[name_key], args, raw, err), labels + more


def _legacy_call(value: JsonObject, known: Collection[str], raw: str) -> tuple[list[SkillCall], list[str]] | None:
    """``{"skill_call": {"name": ..., "args": {...}, "done": true}}`` (or a list of such bodies)."""
    if LEGACY_CALL_KEY not in value or set(value) - {LEGACY_CALL_KEY} - META_KEYS:
        return None
    inner = value[LEGACY_CALL_KEY]
    bodies = inner if isinstance(inner, list) else [inner]
    if not bodies or not all(isinstance(b, dict) for b in bodies):
        return None
    # "done" told the old loop whether more calls follow; here the next round decides.
    results = [_call_from_dict({k: v for k, v in b.items() if k != "done"}, known, raw) for b in bodies]
    found = [r for r in results if r is not None]
    if len(found) != len(results):
        return None
    return [r[0] for r in found], ["skill_call"] + [lab for r in found for lab in r[1]]


def calls_from_value(value: object, known: Collection[str], raw: str) -> tuple[list[SkillCall], list[str]]:
    """Calls held by one parsed value (an object, an array of objects, {"tool_calls": [...]}
    or the legacy {"skill_call": {...}})."""
    if isinstance(value, dict):
        value, recased = protocol_keys(value)
        if recased:
            calls, labels = calls_from_value(value, known, raw)
            return calls, (["key_case", *labels]) if calls else []
        legacy = _legacy_call(value, known, raw)
        if legacy is not None:
            return legacy
        if len(value) == 1 and next(iter(value)) in CALL_LIST_KEYS and isinstance(next(iter(value.values())), list):
            calls, labels = calls_from_value(next(iter(value.values())), known, raw)
            return calls, ([*labels, "tool_calls_list"]) if calls else []
        one = _call_from_dict(value, known, raw)
        return ([one[0]], one[1]) if one else ([], [])
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        results = [_call_from_dict(v, known, json.dumps(v, ensure_ascii=False)) for v in value]
        found = [r for r in results if r is not None]
        if len(found) == len(results):
            return [r[0] for r in found], ["list"] + [lab for r in found for lab in r[1]]
    return [], []


def _reply_from_value(value: object) -> tuple[str, list[str]] | None:
    """Unwrap {"reply": "..."} (meta keys allowed) or a sole reply-synonym key."""
    if not isinstance(value, dict):
        return None
    value = protocol_keys(value)[0]
    value = {k: v for k, v in value.items() if not (k in SKILL_KEYS and v in (None, "", "none", "null"))}
    if isinstance(value.get("reply"), str) and set(value) - {"reply"} <= META_KEYS:
        return value["reply"], []
    if "reply" in value and set(value) - {"reply"} <= META_KEYS:
        return _reply_as_text(value["reply"]), ["reply_not_text"]
    if len(value) == 1:
        key, text = next(iter(value.items()))
        if key in REPLY_SYNONYMS and isinstance(text, str):
            return text, [f"synonym:{key}"]
    return None


def _reply_as_text(reply: object) -> str:
    """A ``reply`` that is not a string, as the text meant: null is empty (the usual empty-answer
    sentence follows), a list one line per item, an object with one text its text, a number as is."""
    if reply is None:
        return ""
    if isinstance(reply, list) and all(isinstance(item, (str, int, float)) for item in reply):
        return "\n".join(f"- {item}" for item in reply)
    only = next(iter(reply.values())) if isinstance(reply, dict) and len(reply) == 1 else None
    if isinstance(only, str):
        return only
    return reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)


def _dedupe(labels: list[str]) -> list[str]:
    return list(dict.fromkeys(labels))


def _split_dotted_actions(calls: list[SkillCall], known: frozenset[str]) -> list[str]:
    """``tasks.list`` for a known ``tasks`` (and no skill named ``tasks.list``) means action ``list``."""
    labels = []
    for call in calls:
        base, dot, action = call.skill.partition(".")
        if dot and call.skill not in known and base in known and action and "action" not in call.args:
            call.skill = base
            call.args = {"action": action, **call.args}
            labels.append("dotted_action")
    return labels


def _unclosed_call(text: str, known: frozenset[str]) -> tuple[list[SkillCall], list[str]] | None:
    """A call whose only fault is its missing last ``}`` (small models miscount the braces after
    the args object); None when more is open, since what was meant then is unknown."""
    closed = text + "}"
    parsed = loads_lenient(closed) if open_region(closed) is None else None
    if parsed is None or not isinstance(parsed[0], dict):
        return None
    calls, labels = calls_from_value(parsed[0], known, closed)
    return (calls, parsed[1] + labels + ["unclosed"]) if calls else None


def _template_calls(
    body: str, known: Collection[str]
) -> tuple[list[SkillCall], list[str], list[tuple[int, int]]] | None:
    """Calls written in a chat template's own text form (``templates``), in order, with their spans;
    None when there are none."""
    found = template_calls(body)
    if found is None:
        return None
    written, labels = found
    calls = [SkillCall(_strip_namespace(c.name, known), c.args, body[c.start : c.end]) for c in written]
    return calls, _dedupe(labels), [(c.start, c.end) for c in written]


def _strip_namespace(name: str, known: Collection[str]) -> str:
    """``functions.notes`` (an OpenAI-style namespace some templates add) as ``notes`` when that is a skill."""
    head, _, rest = name.partition(".")
    return rest if head == "functions" and rest in known else name


def parse_model_output(text: str, skill_names: Collection[str] = (), *, guarded: bool = False) -> ParsedOutput:
    """Read one model output as skill calls (in order) or a final reply; see module docstring.

    A call the answer only quotes (in quotation marks, on a ``>`` line, amid prose) is text
    (``framing``); ``guarded`` (outside content in view) allows nothing but punctuation after it."""
    body, thought = strip_think(text or "")
    recovered = ["think"] if thought else []
    known = frozenset(skill_names)
    templated = _template_calls(body, known)
    if templated is not None:
        return _templated_output(body, templated, recovered, guarded)
    candidates = scan(body)
    return (
        _open_call_output(body, candidates, known, recovered)
        or _calls_output(body, candidates, known, recovered, guarded)
        or _truncated_output(body, candidates, recovered)
        or _reply_output(body, candidates, recovered)
    )


def _templated_output(
    body: str,
    templated: tuple[list[SkillCall], list[str], list[tuple[int, int]]],
    recovered: list[str],
    guarded: bool,
) -> ParsedOutput:
    """An answer in a chat template's text form: its calls, or text when it only quotes them."""
    calls, labels, spans = templated
    quoted = quoted_calls(body, spans, guarded=guarded) if calls else None
    if quoted is not None:
        return ParsedOutput([], body.strip(), _dedupe([*recovered, quoted]))
    return ParsedOutput(calls, None if calls else "", _dedupe(recovered + labels))


def _open_call_output(
    body: str, candidates: list[JsonCandidate], known: frozenset[str], recovered: list[str]
) -> ParsedOutput | None:
    """An answer that starts a call object and never closes it; None for any other answer."""
    outer = body.find("{")
    if not (_CALL_PREFIX_RE.match(body) and outer >= 0 and open_region(body) == outer):
        return None
    # The call object itself is open: objects closed inside it are its args, never calls.
    unclosed = _unclosed_call(body[outer:].rstrip(), known)
    if unclosed is not None:
        return ParsedOutput(unclosed[0], None, _dedupe(recovered + unclosed[1]))
    if candidates:  # cut off inside its args: what was meant is unknown, and it is not for the user
        return ParsedOutput([], "", [*recovered, "truncated_call"])
    return None


def _calls_output(
    body: str, candidates: list[JsonCandidate], known: frozenset[str], recovered: list[str], guarded: bool
) -> ParsedOutput | None:
    """The calls among the answer's JSON values, in order; None when it holds none."""
    calls: list[SkillCall] = []
    spans: list[tuple[int, int]] = []
    labels = list(recovered)
    for cand in candidates:
        found, found_labels = calls_from_value(cand.value, known, cand.raw)
        if found:
            calls.extend(found)
            spans.append(cand.outer)
            labels.extend(cand.labels + found_labels)
    if not calls:
        return None
    quoted = quoted_calls(body, spans, guarded=guarded)
    if quoted is not None:
        # The answer quotes a call (a summary of a document holding one): it is text, nothing runs.
        return ParsedOutput([], body.strip(), _dedupe([*recovered, quoted]))
    for call in calls:
        stripped_name = _strip_namespace(call.skill, known)
        if stripped_name != call.skill:
            call.skill = stripped_name
            labels.append("functions_prefix")
    labels.extend(_split_dotted_actions(calls, known))
    rest = "".join(
        body[a:b] for a, b in zip([0] + [e for _, e in spans], [s for s, _ in spans] + [len(body)], strict=False)
    )
    if rest.strip():
        labels.append("prose")
    if len(spans) > 1:
        labels.append("multiple_objects")
    return ParsedOutput(calls, None, _dedupe(labels))


def _truncated_output(body: str, candidates: list[JsonCandidate], recovered: list[str]) -> ParsedOutput | None:
    """An answer cut off by max_tokens (a constrained answer always starts with "{"): the reply's text
    so far; a half call cannot run and its JSON must not reach the user. None when nothing is cut off."""
    if candidates or open_region(body) is None:
        return None
    m = REPLY_PREFIX_RE.match(body)
    if m:
        return ParsedOutput([], decode_partial_string(body[m.end() :]).strip(), [*recovered, "truncated_reply"])
    if _CALL_PREFIX_RE.match(body) or body.strip().startswith("{"):
        # a call, or an object cut off before its first key (a constrained answer that spent
        # max_tokens on whitespace): nothing in it is for the user
        return ParsedOutput([], "", [*recovered, "truncated_call"])
    return None


def _reply_output(body: str, candidates: list[JsonCandidate], recovered: list[str]) -> ParsedOutput:
    """The final reply: a whole-answer ``{"reply": ...}`` unwrapped, else the text itself."""
    stripped = body.strip()
    if len(candidates) == 1:
        cand = candidates[0]
        whole = body[cand.outer[0] : cand.outer[1]].strip() == stripped
        unwrapped = _reply_from_value(cand.value) if whole else None
        if unwrapped is not None:
            return ParsedOutput([], unwrapped[0], _dedupe(recovered + cand.labels + unwrapped[1]))
    return ParsedOutput([], stripped, recovered)
