"""The SkillManager: loads skill plugins once and runs them safely for the model.

``run`` never raises: unknown names, arguments that break the schema, timeouts and
exceptions all come back as a ``SkillResult`` with ``ok=False`` and a message the
model can act on. Each call runs in a daemon worker thread; on timeout the thread is
abandoned (Python cannot kill a thread), so a hung skill keeps running in the
background until it returns, but the caller gets its error at once.
"""

from __future__ import annotations

import difflib
import json
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jsonschema.protocols import Validator

from assistant_framework.agentskills.library import AgentSkillLibrary
from assistant_framework.config.defaults import default_of
from assistant_framework.config.settings import RuntimeSettings, Settings
from assistant_framework.json_types import JsonObject
from assistant_framework.plugin_import import LoadOnce, forget_module
from assistant_framework.skills.loader import Skill
from assistant_framework.skills.loading import Loading, agent_skill_dirs, load_directory, load_source
from assistant_framework.skills.prepare import PreparedCall, prepare_args, schema_problems, validator_for
from assistant_framework.skills.source import SkillLoadError, SkillSource
from assistant_framework.skills.spec import CatalogEntry, SkillContext
from assistant_framework.skills.support import OwnWordsError
from assistant_framework.workspace import Workspace

#: The built-in skills shipped with the framework: ``<repo>/skills``.
BUILTIN_SKILLS_DIR: Path = Path(__file__).resolve().parents[2] / "skills"

#: The ``runtime`` defaults a manager built without a config takes (the record owns them).
_RUNTIME = RuntimeSettings()


@dataclass
class SkillResult:
    """The outcome of one skill call; errors are values so the model can react."""

    ok: bool
    value: object = None
    error: str | None = None
    error_kind: str | None = None  # "unknown_skill" | "invalid_args" | "timeout" | "exception"
    truncated: bool = False
    elapsed_s: float = 0.0
    #: The error's text is the host's or the skill's own words only (a timeout, ``OwnWordsError``):
    #: unset, an outside skill's error may carry the outside server's words (agent/calls.py).
    own_words: bool = False

    def text(self) -> str:
        """The value as text for the model (JSON for non-strings), or ``Error: ...``."""
        if not self.ok:
            return f"Error: {self.error}"
        return value_text(self.value)


def value_text(value: object) -> str:
    """A skill's return value as text: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def config_is_set(config: Mapping[str, object], dotted: str) -> bool:
    """True when ``dotted`` (``"mail.smtp.host"``, ``"search.enabled"``) names a value that is neither empty nor
    false: the one in ``config``, else the key's documented default (``search.enabled`` is on unless turned off;
    a key no record documents is unset)."""
    path = tuple(dotted.split("."))
    value: object = config
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            try:
                value = default_of(path)
            except KeyError:
                return False
            break
        value = value[part]
    return value is not False and value not in (None, "", [], {})


def truncate_text(text: str, limit: int) -> tuple[str, bool]:
    """Cut ``text`` to ``limit`` characters with a visible marker saying how much was cut."""
    if len(text) <= limit:
        return text, False
    cut = len(text) - limit
    return f"{text[:limit]}\n[... truncated {cut} characters]", True


class SkillManager:
    """Loads skills from folders (later folders override earlier ones) and from ``sources`` (an MCP
    server's tools), and runs them all the same way. ``close`` releases what the sources started."""

    def __init__(
        self,
        dirs: Sequence[str | Path],
        workspace: Workspace,
        *,
        timeout_seconds: float = _RUNTIME.skill_timeout_seconds,
        timeouts: dict[str, float] | None = None,
        result_limit_chars: int = _RUNTIME.skill_result_limit_chars,
        defer: bool = False,
        sources: Sequence[SkillSource] = (),
        agent_skill_dirs: Sequence[str | Path] = (),
    ) -> None:
        self.dirs = [Path(d) for d in dirs]
        #: The ``SKILL.md`` skills of ``agent_skill_dirs``, offered through ``skill_doc`` and ``run_script``.
        self.library = AgentSkillLibrary([Path(d) for d in agent_skill_dirs])
        self.sources = list(sources)
        self.workspace = workspace
        self.timeout_seconds = float(timeout_seconds)
        self.timeouts = dict(timeouts or {})
        self.result_limit_chars = int(result_limit_chars)
        #: Used when ``run`` gets no context; from_config fills in config and timezone.
        self.default_context = SkillContext()
        self._skills: dict[str, Skill] = {}
        self._errors: list[SkillLoadError] = []
        self._validators: dict[str, Validator] = {}
        # What the folders and sources gave, before the SKILL.md skills' tools are added.
        self._plain: dict[str, Skill] = {}
        self._plain_errors: list[SkillLoadError] = []
        self._plain_validators: dict[str, Validator] = {}
        self._module_names: list[str] = []
        self._once = LoadOnce(self.load)
        if not defer:
            self.load()

    @classmethod
    def from_config(
        cls,
        config: JsonObject,
        workspace: Workspace,
        builtin_dir: Path | None = None,
        *,
        defer: bool = False,
        sources: Sequence[SkillSource] = (),
        settings: Settings | None = None,
        loaded: SkillManager | None = None,
    ) -> SkillManager:
        """Built-in skills first, then ``runtime.skills_dirs``, then ``sources``; timeouts and limits
        from ``runtime``.

        With ``defer`` the folders are imported (and the sources loaded) on first use, or by
        ``ensure_loaded`` from a thread. ``settings`` are the config's records when the caller built them
        (once per load or ``/reload``); else they are read from ``config``. ``loaded``: a manager built from
        the same config and sources for another workspace, whose folders' and sources' skills are taken as
        it loaded them instead of importing the folders again (the eval's cases, each in a fresh workspace);
        the ``SKILL.md`` skills are this workspace's own.
        """
        settings = settings if settings is not None else Settings.from_config(config)
        runtime = settings.runtime
        dirs: list[Path] = [builtin_dir or BUILTIN_SKILLS_DIR]
        dirs += [Path(d).expanduser() for d in runtime.skills_dirs]
        manager = cls(
            dirs,
            workspace,
            timeout_seconds=runtime.skill_timeout_seconds,
            timeouts=dict(runtime.skill_timeouts),
            result_limit_chars=runtime.skill_result_limit_chars,
            defer=defer or loaded is not None,
            sources=sources,
            agent_skill_dirs=agent_skill_dirs(runtime.skills_dirs, workspace),
        )
        manager.default_context = SkillContext(config=config, timezone=runtime.timezone, settings=settings)
        if loaded is not None:
            manager._take_loaded(loaded)
        return manager

    # -- loading ---------------------------------------------------------------

    @property
    def skills(self) -> dict[str, Skill]:
        """The loaded skills by name (loaded first if loading was deferred)."""
        self.ensure_loaded()
        return self._skills

    @property
    def errors(self) -> list[SkillLoadError]:
        """Skill folders that failed to load, with why."""
        self.ensure_loaded()
        return self._errors

    def ensure_loaded(self) -> None:
        """Load now unless already loaded; a caller that arrives during a load waits for it."""
        self._once.ensure()

    def load(self) -> None:
        """Import every skill folder once; failures go to ``errors``, the rest still load."""
        found = Loading()
        for directory in self.dirs:
            # The shipped skills' modules are kept for the process while their files are unchanged; a user's
            # folder is imported again at each load (its module code runs again at /reload).
            load_directory(directory, found, reuse=directory.resolve() == BUILTIN_SKILLS_DIR)
        for source in self.sources:
            load_source(source, found)
        self._plain = dict(sorted(found.skills.items()))
        self._plain_errors = found.errors
        self._plain_validators = found.validators
        self._module_names = found.module_names
        self.library.refresh(taken=self._plain)
        self._with_agent_skills()
        self._once.done = True

    def _take_loaded(self, other: SkillManager) -> None:
        """``other``'s folders' and sources' skills as it loaded them (no import), with this workspace's
        ``SKILL.md`` skills; this manager counts as loaded."""
        other.ensure_loaded()
        self._plain = dict(other._plain)
        self._plain_errors = list(other._plain_errors)
        self._plain_validators = dict(other._plain_validators)
        self._module_names = list(other._module_names)
        self.library.refresh(taken=self._plain)
        self._with_agent_skills()
        self._once.done = True

    def _with_agent_skills(self) -> None:
        """The skills and errors with the ``SKILL.md`` skills' tools and problems, as the library has them now."""
        skills = dict(self._plain)
        validators = dict(self._plain_validators)
        errors = list(self._plain_errors)
        errors += [SkillLoadError(p.name, p.folder, p.error) for p in self.library.errors]
        if self.library.skills:
            from assistant_framework.agentskills.tools import agent_skill_tools  # it imports this package

            for tool in agent_skill_tools(self.library, self.timeout_for):
                if tool.name in skills:
                    errors.append(
                        SkillLoadError(
                            tool.name,
                            None,
                            f"{skills[tool.name].where}: skill name {tool.name!r} is the SKILL.md skills' tool; the "
                            "SKILL.md skills cannot be offered: rename that skill",
                        )
                    )
                    continue
                skills[tool.name] = tool
                validators[tool.name] = validator_for(tool.args_schema)
        self._skills = dict(sorted(skills.items()))
        self._errors = errors
        self._validators = validators

    def refresh_agent_skills(self) -> bool:
        """Read the ``SKILL.md`` folders again if one changed (an install, an approved draft); True when
        the skills changed, so the prompt is built again. Cheap when nothing changed (a stat per skill)."""
        self.ensure_loaded()
        if not self.library.refresh(taken=self._plain):
            return False
        self._with_agent_skills()
        return True

    def reload(self) -> None:
        """Forget the imported skill modules and load every folder and source again."""
        for name in self._module_names:
            forget_module(name)
        self.load()

    def close(self) -> None:
        """Release what the sources started (an MCP server is stopped); their skills stop working."""
        for source in self.sources:
            source.close()

    # -- lookup ----------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self.skills)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def closest(self, name: str, n: int = 3, among: Collection[str] | None = None) -> list[str]:
        """Skill names that look like ``name`` (for "did you mean"), only from ``among`` when given."""
        names = self.names() if among is None else [candidate for candidate in self.names() if candidate in among]
        lowered = {candidate.lower(): candidate for candidate in names}
        found = difflib.get_close_matches(str(name).lower(), list(lowered), n=n, cutoff=0.5)
        return [lowered[match] for match in found]

    def catalog(self) -> list[CatalogEntry]:
        """Exactly what the prompt shows: name, description and args schema, sorted by name; a skill whose
        ``REQUIRES_CONFIG`` key is not set is left out (``offered``)."""
        return [
            {"name": skill.name, "description": skill.description, "args_schema": skill.args_schema}
            for skill in self.skills.values()
            if self.offered(skill)
        ]

    def offered_names(self) -> list[str]:
        """The names of the skills the model is offered (``names`` less those ``offered`` leaves out)."""
        return [name for name in self.names() if self.offered(self.skills[name])]

    def offered(self, skill: Skill) -> bool:
        """True unless the skill needs a config key (``REQUIRES_CONFIG``) that the loaded config leaves unset or
        turns off."""
        return not skill.requires_config or config_is_set(self.default_context.config, skill.requires_config)

    def unserved(self, services: Collection[str]) -> frozenset[str]:
        """The loaded skills a turn given ``services`` (``SkillServices`` keys) cannot use: each needs one it
        lacks (``REQUIRES_SERVICE``: ``send_file`` without a chat to send to). The turn neither offers nor runs them."""
        return frozenset(
            name
            for name, skill in self.skills.items()
            if skill.requires_service and skill.requires_service not in services
        )

    def timeout_for(self, name: str) -> float:
        """Config ``skill_timeouts[name]`` over the skill's own timeout over the default."""
        if name in self.timeouts:
            return float(self.timeouts[name])
        skill = self.skills.get(name)
        if skill and skill.timeout_seconds:
            return skill.timeout_seconds
        return self.timeout_seconds

    # -- running ---------------------------------------------------------------

    def validate_args(self, name: str, args: object) -> str | None:
        """None when ``args`` fit the skill's schema as they are, else a message naming fields and rules."""
        self.ensure_loaded()
        validator = self._validators.get(name)
        if validator is None:
            return None
        return schema_problems(validator, args)

    def prepare(self, name: str, args: object) -> PreparedCall | SkillResult:
        """The call ready to run (arguments coerced, fitted to the schema's types and validated, once),
        or a failed ``SkillResult`` saying why not (``unknown_skill`` or ``invalid_args``). Nothing runs.

        What the host checks (policy, audit, repeat check) is ``PreparedCall.args``, and ``run_prepared``
        runs exactly those arguments on exactly this skill, even if the skills are reloaded in between."""
        skill = self.skills.get(name)
        if skill is None:
            near = self.closest(name)
            hint = f"; did you mean: {', '.join(near)}" if near else ""
            return SkillResult(
                ok=False,
                error=f"unknown skill {name!r}{hint}. Available skills: {', '.join(self.names()) or '(none)'}",
                error_kind="unknown_skill",
            )
        validator = self._validators.get(name)
        if validator is None or validator.schema is not skill.args_schema:  # a reload replaced one of the two
            validator = validator_for(skill.args_schema)
        prepared = prepare_args(skill, args, validator)
        if isinstance(prepared, str):
            return SkillResult(
                ok=False, error=f"invalid args for skill {name!r}: {prepared}", error_kind="invalid_args"
            )
        return prepared

    def run(
        self, name: str, args: object, context: SkillContext | None = None, *, workspace: Workspace | None = None
    ) -> SkillResult:
        """Prepare and run in one step (for callers with no check in between); never raises.

        ``workspace`` replaces the manager's own for this call (a guest chat's area)."""
        prepared = self.prepare(name, args)
        if isinstance(prepared, SkillResult):
            return prepared
        return self.run_prepared(prepared, context, workspace=workspace)

    def run_prepared(
        self, call: PreparedCall, context: SkillContext | None = None, *, workspace: Workspace | None = None
    ) -> SkillResult:
        """Run a prepared call with a timeout and package the outcome; never raises. The skill gets its
        own copy of the prepared arguments, so what it does to them changes nothing the host keeps.

        ``workspace`` replaces the manager's own for this call (a guest chat's area)."""
        started = time.monotonic()
        skill = call.skill
        where = workspace if workspace is not None else self.workspace
        args = call.args_copy()
        call_args: tuple[object, ...] = (
            (where, args, context or self.default_context) if skill.wants_context else (where, args)
        )
        result = self._call_with_timeout(skill, call_args, self.timeout_for(skill.name))
        result.elapsed_s = time.monotonic() - started
        return result

    def _call_with_timeout(self, skill: Skill, call_args: tuple[object, ...], timeout: float) -> SkillResult:
        outcome: dict[str, object] = {}

        def target() -> None:
            try:
                outcome["value"] = skill.run(*call_args)
            except BaseException as exc:  # noqa: BLE001 - a skill's SystemExit must not kill the bot
                outcome["error"] = exc

        worker = threading.Thread(target=target, name=f"skill-{skill.name}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            return SkillResult(
                ok=False,
                error=f"skill {skill.name!r} timed out after {timeout:g} s (it may still finish in the background)",
                error_kind="timeout",
                own_words=True,
            )
        if "error" in outcome:
            exc = outcome["error"]
            return SkillResult(
                ok=False,
                error=f"skill {skill.name!r} failed: {type(exc).__name__}: {exc}",
                error_kind="exception",
                own_words=isinstance(exc, OwnWordsError),
            )
        value = outcome.get("value")
        try:
            text = value_text(value)
        except (TypeError, ValueError) as exc:
            return SkillResult(
                ok=False, error=f"skill {skill.name!r} returned an unprintable value: {exc}", error_kind="exception"
            )
        shown, cut = truncate_text(text, self.result_limit_chars)
        return SkillResult(ok=True, value=shown if cut else value, truncated=cut)
