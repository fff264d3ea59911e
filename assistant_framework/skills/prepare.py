"""One skill call made ready to run: its arguments coerced, fitted to the schema's scalar types and
validated, once.

``PreparedCall`` is what the host checks (policy gate, audit, repeat check) and what runs: the
manager's ``run_prepared`` hands the skill a copy of exactly these arguments, so nothing between
the check and the run can change them (not a type fitted later, not a skill or a confirmation
callback that edits the dict it was given).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from assistant_framework.json_types import JsonSchema
from assistant_framework.skills.loader import Skill
from assistant_framework.skills.spec import SkillArgs

_MAX_REPORTED_ERRORS = 3
_INTEGER_TEXT = re.compile(r"[+-]?\d{1,18}")


@dataclass(frozen=True)
class PreparedCall:
    """A call that passed the schema check: the skill object it was checked against and its final
    arguments. ``args`` is the host's copy; a skill receives its own (``args_copy``)."""

    skill: Skill
    args: SkillArgs

    @property
    def name(self) -> str:
        return self.skill.name

    def args_copy(self) -> SkillArgs:
        """A deep copy of the arguments, for anyone who might change what they are given."""
        return copy.deepcopy(self.args)

    def key(self) -> str:
        """The skill and its arguments as one string: equal for the same call however it was written
        (``"15"`` and ``15`` for an integer field give the same key)."""
        return self.skill.name + "\n" + json.dumps(self.args, sort_keys=True, ensure_ascii=False, default=str)


def coerce_args(args: object) -> object:
    """Arguments as a dict when the model sent a JSON string of one, ``{}`` for nothing at all."""
    if args is None:
        return {}
    if isinstance(args, str):
        stripped = args.strip()
        if not stripped:
            return {}
        try:
            parsed = json.loads(stripped)
        except json.JSONDecodeError:
            return args
        return parsed if isinstance(parsed, dict) else args
    return args


def fit_scalar_types(args: object, schema: JsonSchema | None) -> object:
    """Top-level arguments in the scalar type their schema declares, when the model wrote the same
    value in another: ``{"id": 3}`` for a string id, ``"5"`` for an integer, ``"true"`` for a boolean.
    Anything else is left for the schema check to name."""
    properties = (schema or {}).get("properties") if isinstance(schema, dict) else None
    if not isinstance(args, dict) or not isinstance(properties, dict):
        return args
    fitted = dict(args)
    for key, value in args.items():
        wanted = (properties.get(key) or {}).get("type") if isinstance(properties.get(key), dict) else None
        if not isinstance(wanted, str) or isinstance(value, bool):
            continue
        if wanted == "string" and isinstance(value, (int, float)):
            fitted[key] = str(value)
        elif wanted == "integer" and isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
            fitted[key] = int(value.strip())
        elif wanted == "integer" and isinstance(value, float) and value.is_integer():
            fitted[key] = int(value)
        elif wanted == "boolean" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
            fitted[key] = value.strip().lower() == "true"
    return fitted


def form_of(example: str) -> str:
    """The form of a date/time example, ``2026-12-01 09:00`` -> ``YYYY-MM-DD HH:MM`` (others as they are)."""
    form = re.sub(r"\d{4}-\d{2}-\d{2}", "YYYY-MM-DD", example)
    form = re.sub(r"\d{2}:\d{2}", "HH:MM", form)
    return re.sub(r"^\d{2}-\d{2}$", "MM-DD", form)


def describe_validation_error(error: jsonschema.ValidationError) -> str:
    """``args.due: 'tomorrow' does not match '^...'; expected YYYY-MM-DD`` style text; a field with
    ``examples`` in its schema gets them instead of the pattern (``write it like "2026-12-01"``)."""
    where = "args" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    message = f"{where}: {error.message}"
    schema = error.schema if isinstance(error.schema, dict) else {}
    examples = [e for e in schema.get("examples") or [] if isinstance(e, str)]
    if error.validator == "pattern" and examples:
        # A small model cannot read a regular expression; it can follow a form and an example.
        forms = " or ".join(dict.fromkeys(form_of(e) for e in examples))
        return f"{where}: {error.instance!r} is not in the expected form: write it as {forms}, e.g. " + " or ".join(
            json.dumps(e, ensure_ascii=False) for e in examples
        )
    if error.validator == "additionalProperties" and isinstance(error.schema, dict):
        allowed = sorted((error.schema.get("properties") or {}).keys())
        if allowed:
            message += f"; allowed fields: {', '.join(allowed)}"
    elif schema.get("description"):
        message += f"; expected {schema['description']}"
    return message


def schema_problems(validator: Validator, args: Any) -> str | None:
    """None when ``args`` pass ``validator``, else a message naming the fields and the rules broken."""
    errors = sorted(validator.iter_errors(args), key=lambda e: (list(e.absolute_path), e.message))
    if not errors:
        return None
    lines = [describe_validation_error(e) for e in errors[:_MAX_REPORTED_ERRORS]]
    if len(errors) > _MAX_REPORTED_ERRORS:
        lines.append(f"(and {len(errors) - _MAX_REPORTED_ERRORS} more problems)")
    return "; ".join(lines)


def validator_for(schema: JsonSchema) -> Validator:
    """A jsonschema validator for a skill's args schema (the draft the schema names, else the latest)."""
    return jsonschema.validators.validator_for(schema)(schema)


def prepare_args(skill: Skill, args: object, validator: Validator) -> PreparedCall | str:
    """The prepared call, or a message saying why ``args`` do not fit ``skill``'s schema.

    The arguments are copied first: the model's parsed call (kept in the trace) is never changed,
    and nothing that holds the original can change the prepared one."""
    fitted = fit_scalar_types(coerce_args(copy.deepcopy(args)), skill.args_schema)
    problem = schema_problems(validator, fitted)
    if problem:
        return problem
    if not isinstance(fitted, dict):  # a schema without "type": "object" let a non-object through
        return f"args: {type(fitted).__name__} is not an object"
    return PreparedCall(skill, fitted)
