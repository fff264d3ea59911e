"""SkillManager: loading both plugin styles, isolation of broken skills, and safe running."""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

from assistant_framework.skills import BUILTIN_SKILLS_DIR, SkillContext, SkillManager, SkillResult
from assistant_framework.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
BASIC = FIXTURES / "basic"
BROKEN = FIXTURES / "broken"
OVERRIDE = FIXTURES / "override"


@pytest.fixture
def basic(ws: Workspace) -> SkillManager:
    return SkillManager([BASIC], ws, timeout_seconds=5)


def test_both_registration_styles_load(basic: SkillManager) -> None:
    assert basic.errors == []
    assert basic.names() == ["big", "boom", "echo_register", "no_schema", "readme_schema", "shout", "sleeper"]
    reg = basic.get("echo_register")
    assert reg.description == "Echo text back with the chat id."
    assert reg.schema_source == "module"
    assert reg.capabilities == ["read", "send"]
    assert reg.timeout_seconds == 5
    assert reg.wants_context is True
    assert reg.help_text == "Echoes the text back, with the chat id from the context."
    const = basic.get("shout")  # NAME overrides the folder name echo_const
    assert const.folder == (BASIC / "echo_const").resolve()
    assert const.capabilities == ["read"]
    assert const.timeout_seconds is None
    assert const.wants_context is False
    assert basic.run("shout", {"text": "hi", "times": 2}).value == "HI! HI!"


def test_hidden_private_and_init_less_folders_are_ignored(basic: SkillManager) -> None:
    folders = {skill.folder.name for skill in basic.skills.values()} | {e.folder.name for e in basic.errors}
    assert not folders & {"_private", ".hidden", "no_init"}


def test_readme_schema_fallback_and_default_schema(basic: SkillManager) -> None:
    add = basic.get("readme_schema")
    assert add.schema_source == "readme"
    assert add.args_schema["required"] == ["a", "b"]
    assert add.help_text.startswith("Adds `a` and `b`.")
    assert "## Not a heading" in add.help_text  # a heading inside a fence is not a section
    assert basic.run("readme_schema", {"a": 2, "b": 3}).value == 5
    bad = basic.run("readme_schema", {"a": 2, "b": "three"})
    assert bad.error_kind == "invalid_args" and "args.b" in bad.error
    plain = basic.get("no_schema")
    assert plain.schema_source == "default"
    assert plain.args_schema == {"type": "object"}
    assert plain.help_text == ""


def test_modules_are_imported_once_and_reload_reimports(basic: SkillManager) -> None:
    module = sys.modules[basic.get("shout").run.__module__]
    assert module.__name__.startswith("assistant_skills.d") and module.__name__.endswith(".echo_const")
    for _ in range(5):
        assert basic.run("shout", {"text": "x"}).ok
    assert module.LOADS == [1]
    basic.reload()
    reloaded = sys.modules[basic.get("shout").run.__module__]
    assert reloaded is not module
    assert reloaded.LOADS == [1]


def test_reload_picks_up_added_and_deleted_skill_folders(tmp_path: Path, ws: Workspace, monkeypatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # a stale .pyc must not win
    root = tmp_path / "user_skills"
    (root / "alpha").mkdir(parents=True)
    (root / "alpha" / "__init__.py").write_text(
        'DESCRIPTION = "v1"\n\ndef run(ws, args, context=None):\n    return "one"\n'
    )
    manager = SkillManager([root], ws)
    assert manager.run("alpha", {}).value == "one"
    (root / "alpha" / "__init__.py").write_text(
        'DESCRIPTION = "v2"\n\ndef run(ws, args, context=None):\n    return "two"\n'
    )
    (root / "beta").mkdir()
    (root / "beta" / "__init__.py").write_text(
        'DESCRIPTION = "b"\n\ndef run(ws, args, context=None):\n    return "b"\n'
    )
    manager.reload()
    assert manager.get("alpha").description == "v2"
    assert manager.run("alpha", {}).value == "two"
    shutil.rmtree(root / "alpha")  # deleting the folder unloads the skill
    manager.reload()
    assert manager.names() == ["beta"]


def test_broken_skills_are_isolated(ws: Workspace) -> None:
    manager = SkillManager([BROKEN], ws)
    assert manager.names() == ["good"]
    assert manager.run("good", {}).value == "good"
    errors = {error.name: error.error for error in manager.errors}
    assert set(errors) == {"import_error", "register_raises", "missing_run", "bad_schema", "bad_readme_schema"}
    assert (
        "ModuleNotFoundError" in errors["import_error"]
        and "assistant_nonexistent_module_for_tests" in errors["import_error"]
    )
    assert "register() raised KeyError" in errors["register_raises"]
    assert "run" in errors["missing_run"]
    assert "not valid JSON Schema" in errors["bad_schema"] and "nonsense" in errors["bad_schema"]
    assert "not valid JSON" in errors["bad_readme_schema"] and "README.md" in errors["bad_readme_schema"]
    # A failed import leaves nothing half-initialised behind.
    assert not [name for name in sys.modules if name.endswith(".import_error")]


def test_builtin_skills_are_imported_once_per_process_while_unchanged(tmp_path: Path, ws: Workspace) -> None:
    """The shipped skills' modules are shared by every manager and reload of the process (a user folder's are
    not: the test above); each load still gets its own records, and a copy of the folder is a folder of its own."""
    first, second = SkillManager([BUILTIN_SKILLS_DIR], ws), SkillManager([BUILTIN_SKILLS_DIR], ws)
    time_skill = first.get("time")
    assert second.get("time").run is time_skill.run and second.get("time") is not time_skill
    first.reload()
    assert first.get("time").run is time_skill.run
    assert sys.modules[time_skill.module_name].run is time_skill.run  # registered again after the reload's forget
    assert first.run("time", {}).ok
    copied = shutil.copytree(BUILTIN_SKILLS_DIR / "time", tmp_path / "mine" / "time")
    mine = SkillManager([copied.parent], ws)
    assert mine.get("time").run is not time_skill.run and mine.get("time").folder == copied.resolve()


def test_user_dir_overrides_builtin(ws: Workspace) -> None:
    manager = SkillManager([BUILTIN_SKILLS_DIR, OVERRIDE], ws)
    assert manager.get("time").description == "User override of the time skill."
    assert manager.run("time", {}).value == "overridden time"
    assert "tasks" in manager.names()  # the other built-ins stay


def test_from_config_reads_dirs_timeouts_and_limits(ws: Workspace) -> None:
    config = {
        "runtime": {
            "timezone": "Europe/Berlin",
            "skills_dirs": [str(BASIC)],
            "skill_timeout_seconds": 7,
            "skill_timeouts": {"sleeper": 0.3},
            "skill_result_limit_chars": 100,
        }
    }
    manager = SkillManager.from_config(config, ws)
    assert "tasks" in manager.names() and "shout" in manager.names()
    assert manager.timeout_for("sleeper") == 0.3  # config beats the skill's own TIMEOUT_SECONDS = 30
    assert manager.timeout_for("echo_register") == 5  # the skill's own timeout beats the default
    assert manager.timeout_for("shout") == 7
    assert manager.result_limit_chars == 100
    assert manager.run("echo_register", {"text": "x"}).value["timezone"] == "Europe/Berlin"


def test_catalog_is_exactly_name_description_schema(basic: SkillManager) -> None:
    catalog = basic.catalog()
    assert [entry["name"] for entry in catalog] == basic.names()
    assert all(set(entry) == {"name", "description", "args_schema"} for entry in catalog)
    shout = next(entry for entry in catalog if entry["name"] == "shout")
    assert shout["description"] == "Shout the text."
    assert "Turns text into upper case" not in json.dumps(catalog)  # README help never reaches the prompt


def test_schema_violations_name_the_field_and_rule(basic: SkillManager) -> None:
    missing = basic.run("shout", {})
    assert missing.ok is False and missing.error_kind == "invalid_args"
    assert "'text' is a required property" in missing.error
    wrong = basic.run("shout", {"text": "a", "times": "two"})
    assert "args.times: 'two' is not of type 'integer'" in wrong.error
    assert "expected a whole number of repeats" in wrong.error
    extra = basic.run("shout", {"text": "a", "loud": True})
    assert "'loud' was unexpected" in extra.error and "allowed fields: text, times" in extra.error
    assert wrong.text().startswith("Error: invalid args for skill 'shout'")


def test_args_as_json_string_or_none_are_accepted(basic: SkillManager) -> None:
    assert basic.run("shout", '{"text": "json"}').value == "JSON!"
    assert basic.run("no_schema", None).value == "hello"


def test_unknown_skill_lists_closest_names(basic: SkillManager) -> None:
    result = basic.run("shuot", {"text": "x"})
    assert result.ok is False and result.error_kind == "unknown_skill"
    assert "did you mean: shout" in result.error
    assert basic.closest("echo_regster") == ["echo_register"]
    assert basic.closest("zzzzzz") == []


def test_timeout_returns_an_error_without_waiting_for_the_skill(ws: Workspace) -> None:
    manager = SkillManager([BASIC], ws, timeouts={"sleeper": 0.3})
    result = manager.run("sleeper", {"seconds": 5})
    assert result.ok is False and result.error_kind == "timeout"
    assert "timed out after 0.3 s" in result.error
    assert result.elapsed_s < 5  # returned before the skill finished
    assert any(t.name == "skill-sleeper" and t.daemon for t in threading.enumerate())  # abandoned, not killed
    assert manager.run("sleeper", {"seconds": 0}).value == "slept"


def test_exception_becomes_error_result(basic: SkillManager) -> None:
    result = basic.run("boom", {})
    assert result.ok is False and result.error_kind == "exception"
    assert "RuntimeError: the boom skill exploded on purpose" in result.error
    assert result.text() == f"Error: {result.error}"


def test_long_results_are_truncated_with_marker(ws: Workspace) -> None:
    manager = SkillManager([BASIC], ws, result_limit_chars=100)
    long = manager.run("big", {"size": 250})
    assert long.ok and long.truncated
    assert long.value == "x" * 100 + "\n[... truncated 150 characters]"
    obj = manager.run("big", {"kind": "object", "size": 100})
    assert obj.truncated and obj.value.startswith('{"items": [0, 1, 2') and "[... truncated" in obj.value
    short = manager.run("big", {"kind": "object", "size": 3})
    assert short.truncated is False and short.value == {"items": [0, 1, 2]}
    assert short.text() == '{"items": [0, 1, 2]}'


def test_context_reaches_three_argument_run(basic: SkillManager) -> None:
    context = SkillContext(conversation_id="tg:42", chat_id=42, timezone="Asia/Tokyo", services={"memory": "svc"})
    value = basic.run("echo_register", {"text": "hi"}, context).value
    assert value == {"echo": "hi", "chat_id": 42, "timezone": "Asia/Tokyo", "memory": "svc"}
    default = basic.run("echo_register", {"text": "hi"}).value
    assert default["chat_id"] is None and default["timezone"] == "UTC"


def test_skills_write_through_the_workspace(basic: SkillManager, ws: Workspace) -> None:
    assert basic.run("no_schema", {}).ok
    assert (ws.root / "hello.txt").read_text() == "hello"


def test_result_text_for_values() -> None:
    assert SkillResult(ok=True, value="plain").text() == "plain"
    assert SkillResult(ok=True, value=["ä", 1]).text() == '["ä", 1]'
    assert SkillResult(ok=False, error="nope", error_kind="exception").text() == "Error: nope"


def test_builtin_dir_points_at_repo_skills() -> None:
    assert BUILTIN_SKILLS_DIR == Path(__file__).resolve().parent.parent / "skills"
    assert (BUILTIN_SKILLS_DIR / "tasks" / "__init__.py").is_file()


def test_a_manager_given_anothers_load_imports_nothing_and_keeps_its_own_workspace(
    tmp_path: Path, test_skills_dir: Path
) -> None:
    """``from_config(..., loaded=other)`` (the eval: one import for all cases): the folders' skills are the other
    manager's objects, not imported again; calls and the ``SKILL.md`` skills are this workspace's."""
    config = {"runtime": {"timezone": "UTC", "skills_dirs": [str(test_skills_dir)]}}
    first_ws, second_ws = Workspace(tmp_path / "first"), Workspace(tmp_path / "second")
    tone = second_ws.root / ".agents" / "skills" / "tone"
    tone.mkdir(parents=True)
    (tone / "SKILL.md").write_text("---\nname: tone\ndescription: How to write.\n---\nBe brief.\n", encoding="utf-8")
    first = SkillManager.from_config(config, first_ws)
    second = SkillManager.from_config(config, second_ws, loaded=first)
    assert second.get("save_note").run is first.get("save_note").run  # the same import
    assert second.get("time").run is first.get("time").run  # the built-ins too
    assert second.run("save_note", {"name": "x", "text": "hi"}).ok
    assert second_ws.read_text("notes/x.md") == "hi" and not (first_ws.root / "notes" / "x.md").exists()
    assert "skill_doc" in second.names() and "skill_doc" not in first.names()
    assert set(second.names()) - set(first.names()) == {"skill_doc"} | ({"run_script"} & set(second.names()))
    assert SkillManager.from_config(config, second_ws).get("save_note").run is not first.get("save_note").run


def test_a_call_prepared_while_a_reload_swaps_the_skills_is_checked_against_the_skill_it_runs(
    tmp_path: Path, ws: Workspace
) -> None:
    """A reload in another thread replaces the skills, then their validators: a call prepared between the two
    steps sees the new skill with the old validator, and must be checked against the schema of the skill that
    runs (``prepare``'s check that the validator was built for that schema), not the replaced one."""
    folder = tmp_path / "skills" / "count"
    folder.mkdir(parents=True)

    def write(schema: dict) -> None:
        source = f"DESCRIPTION = 'Counts.'\nARGS_SCHEMA = {schema!r}\n\ndef run(workspace, args):\n    return args\n"
        (folder / "__init__.py").write_text(source, encoding="utf-8")

    write({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    manager = SkillManager([folder.parent], ws, timeout_seconds=5)
    manager.ensure_loaded()
    before = manager._validators  # what a reader holds until the reload's last step
    write({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    manager.reload()
    manager._validators = before  # the moment between the two steps, as a concurrent reader sees it
    assert manager.prepare("count", {"text": "hi"}).args == {"text": "hi"}  # type: ignore[union-attr]
    refused = manager.prepare("count", {"n": 1})
    assert isinstance(refused, SkillResult) and refused.error_kind == "invalid_args"
