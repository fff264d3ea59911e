"""Eval cases: data files (JSON or YAML), one case or a list of cases per file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

from assistant_framework.json_types import JsonObject

BUILTIN_CASES_DIR = Path(__file__).resolve().parent / "cases"

CASE_SCHEMA = {
    "type": "object",
    "required": ["id", "category", "message", "expect"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "category": {"type": "string", "minLength": 1},
        "message": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "workspace": {"type": "object", "additionalProperties": {"type": ["string", "object", "array"]}},
        "history": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {"role": {"enum": ["user", "assistant"]}, "content": {"type": "string"}},
            },
        },
        "now": {"type": "string"},
        "expect": {
            "type": "object",
            "properties": {
                "skill": {"type": ["string", "null", "array"], "items": {"type": ["string", "null"]}},
                "args": {"type": "object"},
                "chain": {"type": "array", "items": {"type": "string"}},
                "reply": {},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}


@dataclass
class EvalCase:
    """One user message, the workspace it meets, and what a good model does with it."""

    id: str
    category: str
    message: str
    expect: JsonObject
    workspace: JsonObject = field(default_factory=dict)
    history: list[JsonObject] = field(default_factory=list)
    now: str | None = None
    description: str = ""
    source: str = ""

    @property
    def expected_skills(self) -> list[str]:
        """The acceptable skills for the first call; empty when no call is expected."""
        skill = self.expect.get("skill")
        if skill is None:
            return []
        return [skill] if isinstance(skill, str) else [s for s in skill if s is not None]

    @property
    def allows_no_call(self) -> bool:
        """True when answering without any skill call is acceptable (``skill: null`` or a list with null)."""
        skill = self.expect.get("skill")
        return skill is None or (isinstance(skill, list) and None in skill)


class CaseError(ValueError):
    """A case file that cannot be used; the message names the file and the case."""


def load_cases(dirs: list[Path]) -> list[EvalCase]:
    """All cases from the given folders (``*.json``, ``*.yaml``, ``*.yml``) or files, ids unique."""
    cases: list[EvalCase] = []
    seen: dict[str, str] = {}
    validator = jsonschema.Draft202012Validator(CASE_SCHEMA)
    for folder in dirs:
        folder = Path(folder)
        if folder.is_file():  # one file, e.g. what ``trace export-cases --out`` wrote
            paths = [folder]
        elif folder.is_dir():
            paths = [p for p in sorted(folder.rglob("*")) if p.suffix in (".json", ".yaml", ".yml") and p.is_file()]
        else:
            raise CaseError(f"eval cases folder or file {folder} does not exist")
        for path in paths:
            for raw in _read(path):
                errors = sorted(validator.iter_errors(raw), key=lambda e: list(e.absolute_path))
                if errors:
                    where = ".".join(str(p) for p in errors[0].absolute_path) or "(case)"
                    raise CaseError(f"{path}: case {raw.get('id', '?')!r}: {where}: {errors[0].message}")
                if raw["id"] in seen:
                    raise CaseError(f"{path}: case id {raw['id']!r} already used in {seen[raw['id']]}")
                seen[raw["id"]] = str(path)
                cases.append(EvalCase(**raw, source=str(path)))
    return cases


def _read(path: Path) -> list[JsonObject]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CaseError(f"{path}: cannot parse: the file is not UTF-8") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise CaseError(f"{path}: cannot parse: {exc}") from None
    if isinstance(data, dict) and "cases" in data:
        data = data["cases"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise CaseError(f"{path}: expected a case object or a list of cases")
    return data
