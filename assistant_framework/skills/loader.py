"""Loading skill plugins: import a skill folder once and turn it into a ``Skill`` record.

The folder is checked against the contract in ``skills/spec.py`` (module constants and ``run``). Every
problem raises ``SkillDefinitionError`` with a message naming the folder and what is wrong; the manager
records it and goes on. A deprecated form loads with a warning naming the form to use (``Skill.deprecated``).
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import logging
import re
import types
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import jsonschema

from assistant_framework.json_types import JsonObject, JsonSchema
from assistant_framework.plugin_import import PluginImportError, forget_module, import_plugin  # noqa: F401 (forget_module re-exported)
from assistant_framework.skills.spec import DEFAULT_CAPABILITIES, DEPRECATED_FORMS, KNOWN_CAPABILITIES, SERVICE_NAMES

if TYPE_CHECKING:
    from assistant_framework.skills.once import OnceCall

log = logging.getLogger(__name__)

DEFAULT_SCHEMA: JsonSchema = {"type": "object"}
MODULE_ROOT = "assistant_skills"

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


class SkillDefinitionError(Exception):
    """A skill folder that cannot be loaded; the message says why."""


@dataclass
class Skill:
    """A loaded skill: what the model sees, the help for humans, and how to call it.

    A plugin folder's skill has ``folder``, ``source_path`` and ``module_name``; a skill from a
    ``SkillSource`` (an MCP server's tool) has none of them and says where it comes from in ``origin``.
    """

    name: str
    description: str
    args_schema: JsonSchema
    #: ``run(workspace, args)`` or ``run(workspace, args, context)`` (``wants_context``); returns the result
    run: Callable[..., object]
    folder: Path | None
    source_path: Path | None
    readme_path: Path | None
    help_text: str
    schema_source: str
    capabilities: list[str]
    timeout_seconds: float | None
    wants_context: bool
    module_name: str
    #: What the folder uses of ``spec.DEPRECATED_FORMS``: one sentence each, naming the form to use.
    deprecated: list[str] = field(default_factory=list)
    #: Where a skill that is no plugin folder comes from (``MCP server 'time' tool 'get_current_time'``).
    origin: str = ""
    #: What a call with a given ``action`` needs (``ACTION_CAPABILITIES``), each a part of ``capabilities``.
    action_capabilities: dict[str, list[str]] = field(default_factory=dict)
    #: The config key that must be set for the skill to be offered (``REQUIRES_CONFIG``, ``"calendar.url"``).
    requires_config: str = ""
    #: The turn's service it needs to be offered and run (``REQUIRES_SERVICE``, ``"send_file"``); "": none.
    requires_service: str = ""
    #: Whether its results are outside content: None as its capabilities say (``network`` is outside),
    #: True always, False never (an outside server the owner marked trusted).
    outside: bool | None = None
    #: The name the policy's per-skill rule is read under for one call, from its arguments (``run_script``:
    #: the ``SKILL.md`` skill whose script it runs, ``policy.skills.<that name>``); None: ``name``.
    policy_name: Callable[[JsonObject], str] | None = None
    #: ``done_before(workspace, args, context) -> bool`` of a skill that acts outside through a ledger of actions
    #: out (skills/once.py): True when the call matches what the turn's message already did, so it will do
    #: nothing and the gate asks no one about it; None: the skill has no such ledger.
    done_before: Callable[..., bool] | None = None
    #: ``once_call(workspace, args, context) -> OnceCall | None`` of a skill with such a ledger: the call as its
    #: ledger matches it, where the gate keeps the owner's no (a replay after a kill is not asked again).
    once_call: Callable[..., OnceCall | None] | None = None
    #: ``goes_to(workspace, args, context) -> str | None`` of a skill whose call reaches someone its arguments do
    #: not name (a mail's reply: the original's sender): who, resolved, for the owner's question; None: not known.
    goes_to: Callable[..., str | None] | None = None

    @property
    def where(self) -> str:
        """The folder a plugin skill was loaded from, or the origin of another skill."""
        return str(self.folder) if self.folder is not None else self.origin


# -- README parsing (pure) -----------------------------------------------------


def readme_sections(text: str) -> dict[str, str]:
    """Map each ``## Heading`` (lower-cased) to its body text; fenced code is not scanned for headings."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match and len(match.group(1)) == 2:
            current = sections.setdefault(match.group(2).strip().lower(), [])
            continue
        if match and len(match.group(1)) == 1:
            current = None
            continue
        if current is not None:
            current.append(line)
    return {key: "\n".join(lines).strip() for key, lines in sections.items()}


def first_fenced_block(text: str) -> str | None:
    """The content of the first fenced code block in ``text``, or None."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        opening = _FENCE.match(line)
        if not opening:
            continue
        fence = opening.group(1)
        body: list[str] = []
        for inner in lines[start + 1 :]:
            if inner.strip().startswith(fence):
                return "\n".join(body)
            body.append(inner)
        return "\n".join(body)  # unterminated fence: take the rest
    return None


def readme_schema(sections: dict[str, str], readme: Path) -> object:
    """The JSON value under ``## Args schema`` (check_schema checks it), or None when the README has none."""
    body = sections.get("args schema")
    if body is None:
        return None
    block = first_fenced_block(body)
    if block is None:
        raise SkillDefinitionError(f"{readme}: '## Args schema' has no fenced JSON block")
    try:
        value = json.loads(block)
    except json.JSONDecodeError as exc:
        raise SkillDefinitionError(
            f"{readme}: '## Args schema' is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    return value


def _schema_problem(schema: JsonSchema) -> str | None:
    """Why ``schema`` is not valid JSON Schema (the path and the rule), or None."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "/".join(str(p) for p in exc.path) or "(top level)"
        return f"at {path}: {exc.message}"
    return None


@functools.lru_cache(maxsize=256)
def _schema_problem_of_text(text: str) -> str | None:
    # The metaschema check is most of a skill load; the eval loads the same skills once per case.
    return _schema_problem(json.loads(text))


def check_schema(schema: object, where: str) -> JsonSchema:
    """Raise SkillDefinitionError unless ``schema`` is a valid JSON Schema object."""
    if not isinstance(schema, dict):
        raise SkillDefinitionError(f"{where}: args schema must be a JSON object, got {type(schema).__name__}")
    try:
        problem = _schema_problem_of_text(json.dumps(schema, sort_keys=True, allow_nan=False))
    except (TypeError, ValueError):  # not plain JSON (a set, NaN...): checked as it is, not cached
        problem = _schema_problem(schema)
    if problem:
        raise SkillDefinitionError(f"{where}: args schema is not valid JSON Schema {problem}")
    return schema


def accepts_context(func: Callable[..., object]) -> bool:
    """True when ``func`` takes a third positional parameter (the SkillContext)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = 0
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return True
        if param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 3


# -- importing (I/O) -----------------------------------------------------------


def is_skill_folder(path: Path) -> bool:
    """A folder that may hold a skill: not hidden/private and with an ``__init__.py``."""
    return path.is_dir() and not path.name.startswith(("_", ".")) and (path / "__init__.py").is_file()


def import_skill_module(folder: Path, *, reuse: bool = False) -> types.ModuleType:
    """Import ``folder/__init__.py`` as a package under its unique module name (``reuse``: see ``import_plugin``)."""
    try:
        return import_plugin(folder, MODULE_ROOT, reuse=reuse)
    except PluginImportError as exc:
        raise SkillDefinitionError(str(exc)) from exc.__cause__


class RawDefinition(TypedDict):
    """A skill's definition as its module declares it (constants or ``register()``), before it is checked: each
    value is whatever the plugin wrote (None: not given)."""

    name: object
    description: object
    args_schema: object
    run: object
    capabilities: object
    action_capabilities: object
    timeout_seconds: object
    requires_config: object
    requires_service: object


def _definition(module: types.ModuleType, folder: Path) -> RawDefinition:
    """The skill's raw definition from ``register()`` or from module constants."""
    register = getattr(module, "register", None)
    if callable(register):
        try:
            data = register()
        except Exception as exc:
            raise SkillDefinitionError(f"{folder}: register() raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(data, dict):
            raise SkillDefinitionError(f"{folder}: register() must return a dict, got {type(data).__name__}")
        return {
            "name": data.get("name"),
            "description": data.get("description"),
            "args_schema": data.get("args_schema"),
            "run": data.get("run"),
            "capabilities": data.get("capabilities"),
            "action_capabilities": data.get("action_capabilities"),
            "timeout_seconds": data.get("timeout_seconds"),
            "requires_config": data.get("requires_config"),
            "requires_service": data.get("requires_service"),
        }
    return {
        "name": getattr(module, "NAME", None) or folder.name,
        "description": getattr(module, "DESCRIPTION", None),
        "args_schema": getattr(module, "ARGS_SCHEMA", None),
        "run": getattr(module, "run", None),
        "capabilities": getattr(module, "CAPABILITIES", None),
        "action_capabilities": getattr(module, "ACTION_CAPABILITIES", None),
        "timeout_seconds": getattr(module, "TIMEOUT_SECONDS", None),
        "requires_config": getattr(module, "REQUIRES_CONFIG", None),
        "requires_service": getattr(module, "REQUIRES_SERVICE", None),
    }


def _capabilities(value: Any, folder: Path) -> list[str]:
    if value is None:
        return list(DEFAULT_CAPABILITIES)
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise SkillDefinitionError(f"{folder}: capabilities must be a list of strings, got {value!r}")
    unknown = [v for v in value if v not in KNOWN_CAPABILITIES]
    if unknown:
        raise SkillDefinitionError(f"{folder}: unknown capabilities {unknown}; known: {list(KNOWN_CAPABILITIES)}")
    return list(dict.fromkeys(value))


def _action_capabilities(value: object, declared: list[str], folder: Path) -> dict[str, list[str]]:
    """``ACTION_CAPABILITIES`` checked: each action's list a non-empty part of the declared capabilities."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SkillDefinitionError(f"{folder}: action_capabilities must be an object, got {value!r}")
    checked: dict[str, list[str]] = {}
    for action, caps in value.items():
        if not isinstance(action, str) or isinstance(caps, str) or not isinstance(caps, (list, tuple)) or not caps:
            raise SkillDefinitionError(f"{folder}: action_capabilities[{action!r}] must be a non-empty list")
        outside = [c for c in caps if c not in declared]
        if outside:
            raise SkillDefinitionError(
                f"{folder}: action_capabilities[{action!r}] names {outside}, which CAPABILITIES does not declare"
            )
        checked[action.strip().lower()] = list(dict.fromkeys(caps))
    return checked


_CONFIG_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _requires_config(value: object, folder: Path) -> str:
    """``REQUIRES_CONFIG`` checked: a dotted config key (``"mail.smtp.host"``), or nothing."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not _CONFIG_KEY.match(value):
        raise SkillDefinitionError(f"{folder}: requires_config must be a dotted config key, got {value!r}")
    return value


def _requires_service(value: object, folder: Path) -> str:
    """``REQUIRES_SERVICE`` checked: one of the services a turn may give its skills, or nothing."""
    if value is None or value == "":
        return ""
    if value not in SERVICE_NAMES:
        raise SkillDefinitionError(
            f"{folder}: requires_service must be one of {', '.join(sorted(SERVICE_NAMES))}, got {value!r}"
        )
    return str(value)


def _timeout(value: object, folder: Path) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SkillDefinitionError(f"{folder}: timeout_seconds must be a positive number, got {value!r}")
    return float(value)


#: Names a model can write back in a call (the protocol parser's name rule, without ``:`` and ``/``).
SKILL_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")


@functools.lru_cache(maxsize=1024)
def tool_name(skill: str) -> str:
    """A skill's name as OpenAI-style servers accept a function name (``^[a-zA-Z0-9_-]{1,64}$``): other
    characters (a dot, a space, ``ü``) become ``_``. Names already in that form are unchanged. Two skills
    with the same tool name cannot both load (a native tool call could not tell them apart). Kept per name: a
    load compares each skill's with every other's."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", skill)[:64] or "_"


def _suggest_name(name: str) -> str:
    """An ASCII name close to ``name``, for the error message (``bücher liste`` -> ``bucher_liste``)."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    suggestion = re.sub(r"[^A-Za-z0-9_.\-]+", "_", ascii_name).strip("_.-")[:64] or "my_skill"
    return suggestion if suggestion[0].isalpha() else f"_{suggestion}"[:64]


def _check_identity(raw: RawDefinition, folder: Path) -> tuple[str, str, Callable[..., object]]:
    """A skill's name, description and run are what a call needs: they are returned checked; raises
    SkillDefinitionError."""
    name = raw["name"]
    if not isinstance(name, str) or not name.strip():
        raise SkillDefinitionError(f"{folder}: skill name must be a non-empty string, got {name!r}")
    if not SKILL_NAME_RE.fullmatch(name):
        # The model writes the name back in a call: a space or a non-ASCII letter would never read as one.
        raise SkillDefinitionError(
            f"{folder}: skill name {name!r} must be ASCII letters, digits and _ - . "
            f"(starting with a letter or _, at most 64 characters), e.g. {_suggest_name(name)!r}"
        )
    description = raw["description"]
    if not isinstance(description, str) or not description.strip():
        raise SkillDefinitionError(
            f"{folder}: skill {name!r} has no description (DESCRIPTION or register()['description'])"
        )
    run = raw["run"]
    if not callable(run):
        raise SkillDefinitionError(f"{folder}: skill {name!r} has no callable run(workspace, args)")
    return name, description, run


def _args_schema(raw: RawDefinition, sections: dict[str, str], readme_path: Path | None) -> tuple[object, str]:
    """The skill's argument schema and where it came from: the module, its README, or the default."""
    if raw["args_schema"] is not None:
        schema, source = raw["args_schema"], "module"
    else:
        from_readme = readme_schema(sections, readme_path) if readme_path else None
        schema, source = (from_readme, "readme") if from_readme is not None else (dict(DEFAULT_SCHEMA), "default")
    return schema, source


def _deprecated_forms(module: types.ModuleType, wants_context: bool) -> list[str]:
    """The sentences for the old forms the skill uses (``register()``, a two-argument ``run``)."""
    return [
        DEPRECATED_FORMS[form]
        for form, used in (
            ("register", callable(getattr(module, "register", None))),
            ("two_argument_run", not wants_context),
        )
        if used
    ]


def load_skill_folder(folder: Path, *, reuse: bool = False) -> Skill:
    """Import one skill folder and validate its definition; raises SkillDefinitionError.

    With ``reuse`` (a folder the framework ships) an unchanged folder's module is not imported again
    (``import_plugin``), nor its record checked again: a copy of the record made from that module comes back."""
    if not reuse:
        folder = folder.resolve()
        return _checked_skill(folder, lambda: import_skill_module(folder))
    folder = _real_path(folder)
    module = import_skill_module(folder, reuse=True)
    kept = _KEPT_SKILLS.get(module.__name__)
    if kept is None or kept[0] is not module:
        kept = (module, _checked_skill(folder, lambda: module))
        _KEPT_SKILLS[module.__name__] = kept
    else:
        _warn_deprecated(kept[1].name, folder, kept[1].deprecated)
    return copy.copy(kept[1])


@functools.lru_cache(maxsize=256)
def _real_path(folder: Path) -> Path:
    """A shipped skill folder's real path, read once per process (``resolve`` is a ``lstat`` per part of it)."""
    return folder.resolve()


#: A reused skill module's name -> the module and the record made from it (``load_skill_folder``'s ``reuse``).
_KEPT_SKILLS: dict[str, tuple[types.ModuleType, Skill]] = {}


def _warn_deprecated(name: str, folder: Path, sentences: list[str]) -> None:
    for sentence in sentences:
        log.warning("skill %s (%s): %s", name, folder, sentence)


def _checked_skill(folder: Path, import_module: Callable[[], types.ModuleType]) -> Skill:
    """The skill record of ``folder``, whose module ``import_module`` gives; raises SkillDefinitionError."""
    readme = folder / "README.md"
    readme_path = readme if readme.is_file() else None
    try:
        sections = readme_sections(readme.read_text(encoding="utf-8")) if readme_path else {}
    except UnicodeDecodeError:
        raise SkillDefinitionError(f"{readme}: not UTF-8 text; save it as UTF-8") from None
    module = import_module()
    raw = _definition(module, folder)

    name, description, run = _check_identity(raw, folder)
    declared, source = _args_schema(raw, sections, readme_path)
    schema = check_schema(declared, f"{folder} (schema from {source})")
    wants_context = accepts_context(run)
    deprecated = _deprecated_forms(module, wants_context)
    _warn_deprecated(name.strip(), folder, deprecated)
    return Skill(
        name=name.strip(),
        description=description.strip(),
        args_schema=schema,
        run=run,
        folder=folder,
        source_path=Path(module.__file__ or folder / "__init__.py"),
        readme_path=readme_path,
        help_text=sections.get("what it does", ""),
        schema_source=source,
        capabilities=(capabilities := _capabilities(raw["capabilities"], folder)),
        action_capabilities=_action_capabilities(raw["action_capabilities"], capabilities, folder),
        timeout_seconds=_timeout(raw["timeout_seconds"], folder),
        requires_config=_requires_config(raw["requires_config"], folder),
        requires_service=_requires_service(raw["requires_service"], folder),
        wants_context=wants_context,
        module_name=module.__name__,
        deprecated=deprecated,
        done_before=done_before if callable(done_before := getattr(module, "done_before", None)) else None,
        goes_to=goes_to if callable(goes_to := getattr(module, "goes_to", None)) else None,
        once_call=once_call if callable(once_call := getattr(module, "once_call", None)) else None,
    )
