"""One written contract per plugin kind (assistant_framework/skills/spec.py, collectors/spec.py): the
built-ins follow it, the loaders check against it, and each older form still loads with a warning that
names the form to use."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from assistant_framework.collectors import spec as collector_spec
from assistant_framework.collectors.manager import BUILTIN_DIR, CollectorManager
from assistant_framework.skills import BUILTIN_SKILLS_DIR, SkillContext, SkillManager
from assistant_framework.skills import spec as skill_spec
from assistant_framework.skills.loader import load_skill_folder
from tests.fixtures.collectors.helpers import write_collector

ROOT = Path(__file__).resolve().parents[1]

CURRENT_SKILL = """
DESCRIPTION = "Adds two numbers."
ARGS_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
def run(workspace, args, context=None):
    return args["a"] + args["b"]
"""

REGISTER_SKILL = """
def register():
    return {"name": "old_add", "description": "Adds two numbers.", "run": lambda ws, args, context=None: args["a"] + 1}
"""

TWO_ARGUMENT_SKILL = """
DESCRIPTION = "Adds one."
def run(workspace, args):
    return args["a"] + 1
"""


def _skill(base: Path, name: str, source: str) -> None:
    folder = base / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(source), encoding="utf-8")
    (folder / "README.md").write_text(f"# {name}\n", encoding="utf-8")


def _warnings(caplog: pytest.LogCaptureFixture, kind: str, name: str) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and f"{kind} {name} (" in r.getMessage()
    ]


def test_every_builtin_skill_is_written_in_the_current_form(ws, caplog):
    manager = SkillManager([BUILTIN_SKILLS_DIR], ws)
    assert manager.errors == []
    assert len(manager.names()) >= 10
    for name in manager.names():
        skill = manager.get(name)
        assert skill is not None and skill.deprecated == [], (name, skill and skill.deprecated)
        assert skill.wants_context and skill.schema_source == "module", name
    assert not [r for r in caplog.records if "deprecated" in r.getMessage()]


def test_a_skill_in_the_current_form_loads_without_a_warning(tmp_path, ws, caplog):
    _skill(tmp_path, "add", CURRENT_SKILL)
    manager = SkillManager([tmp_path], ws)
    assert manager.get("add").deprecated == []
    assert manager.run("add", {"a": 2, "b": 3}, SkillContext()).value == 5
    assert _warnings(caplog, "skill", "add") == []


@pytest.mark.parametrize(
    ("source", "name", "form", "says"),
    [
        (REGISTER_SKILL, "old_add", "register", "module constants DESCRIPTION, ARGS_SCHEMA (optional) and run("),
        (TWO_ARGUMENT_SKILL, "plus_one", "two_argument_run", "use run(workspace, args, context=None)"),
    ],
)
def test_an_older_skill_form_still_runs_and_warns_naming_the_new_one(tmp_path, ws, caplog, source, name, form, says):
    _skill(tmp_path, name, source)
    manager = SkillManager([tmp_path], ws)
    skill = manager.get(name)
    assert skill is not None, manager.errors
    assert skill.deprecated == [skill_spec.DEPRECATED_FORMS[form]]
    assert manager.run(name, {"a": 2}).value == 3  # still works this release
    logged = _warnings(caplog, "skill", name)
    assert len(logged) == 1 and says in logged[0] and "deprecated" in logged[0]


def test_skill_context_is_the_one_of_the_spec():
    assert SkillContext is skill_spec.SkillContext
    context = SkillContext(config={"runtime": {"timezone": "Asia/Tokyo"}})
    assert context.settings.runtime.timezone == "Asia/Tokyo"  # the records read from the config given


CURRENT_COLLECTOR = """
DESCRIPTION = "Writes a greeting."
FILE_STRUCTURE = "hello.md: the greeting."
GENERATED_FILES = ["collectors/hello/hello.md"]
INTERVAL_SECONDS = 60
def run(workspace, config):
    workspace.write_text("collectors/hello/hello.md", config.get("greeting", "hi"))
    return {"summary": "greeted"}
"""

CREATE_COLLECTOR = """
def create_collector(config):
    return {"description": "Old name.", "interval_seconds": 60, "generated_files": [], "file_structure": "",
            "run": lambda ws: ws.write_text("collectors/old/x.md", config.get("greeting", "hi"))}
"""

RUN_WITHOUT_CONFIG = """
DESCRIPTION = "No config."
FILE_STRUCTURE = "x.md"
GENERATED_FILES = ["collectors/bare/x.md"]
INTERVAL_SECONDS = 60
def run(workspace):
    workspace.write_text("collectors/bare/x.md", "bare")
"""


def test_every_builtin_collector_is_written_in_the_current_form(ws, caplog):
    manager = CollectorManager([BUILTIN_DIR], {}, ws)
    assert manager.errors == []
    assert sorted(manager.collectors) == ["calendar", "mail", "rss"]
    for name, collector in manager.collectors.items():
        assert collector.deprecated == [], name
    assert not [r for r in caplog.records if "deprecated" in r.getMessage()]


def test_builtin_collectors_share_one_module_and_each_registers_with_its_own_config(ws):
    """A shipped collector is imported once per process while its files are unchanged; each manager's load still
    registers it with that manager's section (and a reload with the new one)."""
    hourly = CollectorManager([BUILTIN_DIR], {"rss": {"interval_seconds": 3600}}, ws)
    daily = CollectorManager([BUILTIN_DIR], {"rss": {"cron": "0 7 * * *"}}, ws)
    first, second = hourly.collectors["rss"], daily.collectors["rss"]
    assert first.module is second.module and first.module is not None
    assert (first.interval_seconds, first.cron) == (3600.0, None) and (second.interval_seconds, second.cron) == (
        None,
        "0 7 * * *",
    )
    hourly.reload({"rss": {"interval_seconds": 60}})
    assert hourly.collectors["rss"].module is first.module and hourly.collectors["rss"].interval_seconds == 60.0


def test_an_older_form_warns_at_each_load_of_a_reused_folder(tmp_path, caplog):
    """The framework's own folders are not imported again while unchanged (``reuse``): a deprecated form is
    still said at each load, as a user's folder says it at each reload."""
    _skill(tmp_path, "plus_one", TWO_ARGUMENT_SKILL)
    loaded = [load_skill_folder(tmp_path / "plus_one", reuse=True) for _ in range(2)]
    assert loaded[0].run is loaded[1].run and loaded[0] is not loaded[1]
    assert len(_warnings(caplog, "skill", "plus_one")) == 2


def test_a_collector_in_the_current_form_loads_without_a_warning(tmp_path, ws, caplog):
    write_collector(tmp_path, "hello", CURRENT_COLLECTOR)
    manager = CollectorManager([tmp_path], {"hello": {"greeting": "moin"}}, ws)
    collector = manager.collectors["hello"]
    assert collector.deprecated == []
    assert collector.run(ws) == {"summary": "greeted"}
    assert ws.read_text("collectors/hello/hello.md") == "moin"
    assert _warnings(caplog, "collector", "hello") == []


@pytest.mark.parametrize(
    ("source", "name", "form", "says", "written"),
    [
        (CREATE_COLLECTOR, "old", "create_collector", "name it register_collector(config)", "moin"),
        (RUN_WITHOUT_CONFIG, "bare", "run_without_config", "use run(workspace, config)", "bare"),
    ],
)
def test_an_older_collector_form_still_runs_and_warns_naming_the_new_one(
    tmp_path, ws, caplog, source, name, form, says, written
):
    write_collector(tmp_path, name, source)
    manager = CollectorManager([tmp_path], {name: {"greeting": "moin"}}, ws)
    assert manager.errors == []
    collector = manager.collectors[name]
    assert collector.deprecated == [collector_spec.DEPRECATED_FORMS[form]]
    collector.run(ws)  # still works this release
    assert ws.read_text(f"collectors/{name}/x.md") == written
    logged = _warnings(caplog, "collector", name)
    assert len(logged) == 1 and says in logged[0] and "deprecated" in logged[0]


def test_the_guides_point_to_the_written_contracts():
    assert "assistant_framework/skills/spec.py" in (ROOT / "docs" / "skills.md").read_text(encoding="utf-8")
    assert "assistant_framework/collectors/spec.py" in (ROOT / "docs" / "collectors.md").read_text(encoding="utf-8")


def test_action_capabilities_must_be_a_part_of_the_declared_ones(tmp_path):
    """``ACTION_CAPABILITIES`` may only narrow: an action said to need less is taken at its word, one naming a
    capability the skill does not declare is a load error."""
    from assistant_framework.skills.loader import SkillDefinitionError, load_skill_folder

    folder = tmp_path / "outbox"
    folder.mkdir()
    (folder / "README.md").write_text("# Outbox\n")
    source = (
        'DESCRIPTION = "outbox"\nCAPABILITIES = ["write", "send"]\nACTION_CAPABILITIES = {ACTIONS}\n'
        "def run(workspace, args, context=None):\n    return 'ok'\n"
    )
    (folder / "__init__.py").write_text(source.replace("{ACTIONS}", '{"Draft": ["write"]}'))
    assert load_skill_folder(folder).action_capabilities == {"draft": ["write"]}
    other = tmp_path / "outbox2"
    other.mkdir()
    (other / "README.md").write_text("# Outbox\n")
    (other / "__init__.py").write_text(source.replace("{ACTIONS}", '{"draft": ["delete"]}'))
    with pytest.raises(SkillDefinitionError, match="CAPABILITIES does not declare"):
        load_skill_folder(other)
