"""``skills list`` and ``skills inspect`` run in-process through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

from assistant_framework.skills import BUILTIN_SKILLS_DIR
from messaging_llm_bot.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures" / "skills"


def _rows(output: str) -> dict[str, str]:
    return {line.split()[0]: line for line in output.splitlines() if line.strip()}


def test_list_default_dirs_are_builtins_plus_config_skills_dirs(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "runtime.json").write_text(json.dumps({"skills_dirs": [str(FIXTURES / "basic")]}))
    assert main(["skills", "list", "--config", str(config)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert "tasks" in rows and "shout" in rows
    assert rows["shout"].split()[1] == "loaded" and rows["shout"].endswith("Shout the text.")


def test_list_without_config_dir_shows_builtins(tmp_path: Path, capsys) -> None:
    assert main(["skills", "list", "--config", str(tmp_path / "missing")]) == 0
    rows = _rows(capsys.readouterr().out)
    assert set(rows) == {p.name for p in BUILTIN_SKILLS_DIR.iterdir() if (p / "__init__.py").is_file()}


def test_list_with_skills_dirs_shows_errors_and_replaces_defaults(capsys) -> None:
    status = main(["skills", "list", "--skills", str(FIXTURES / "broken"), "--skills", str(FIXTURES / "override")])
    rows = _rows(capsys.readouterr().out)
    assert status == 1  # some skill failed to load
    assert "tasks" not in rows  # --skills replaces the built-ins
    assert rows["good"].split()[1] == "loaded"
    assert rows["time"].endswith("User override of the time skill.")
    assert "error:" in rows["missing_run"] and "run" in rows["missing_run"]
    assert "error:" in rows["bad_schema"]


def test_inspect_shows_three_separate_parts(capsys) -> None:
    assert main(["skills", "inspect", "readme_schema", "--skills", str(FIXTURES / "basic")]) == 0
    out = capsys.readouterr().out
    meta, rest = out.split("== Help (README ## What it does) ==")
    help_part, impl = rest.split("== Implementation ==")
    assert "== Prompt-visible metadata ==" in meta
    assert "description: Add two numbers." in meta
    schema_line = next(line for line in meta.splitlines() if line.startswith("args_schema: "))
    assert json.loads(schema_line.removeprefix("args_schema: "))["required"] == ["a", "b"]
    assert "Adds `a` and `b`." in help_part and "Adds" not in meta
    assert f"source: {(FIXTURES / 'basic' / 'readme_schema' / '__init__.py').resolve()}" in impl
    assert "README.md" in impl
    assert "schema source: readme" in impl
    assert "capabilities: read" in impl
    assert "timeout: 60 s (default)" in impl


def test_inspect_builtin_module_schema(capsys) -> None:
    assert main(["skills", "inspect", "file"]) == 0
    out = capsys.readouterr().out
    assert "schema source: module" in out and "capabilities: read, write, delete" in out


def test_inspect_unknown_name_exits_2_with_closest(capsys) -> None:
    assert main(["skills", "inspect", "taks"]) == 2
    assert "closest: tasks" in capsys.readouterr().err


def test_list_with_a_missing_skills_folder_exits_2(tmp_path, capsys) -> None:
    assert main(["skills", "list", "--skills", str(tmp_path / "nonexistent")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_inspect_json(capsys) -> None:
    assert main(["skills", "inspect", "facts", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["name"] == "facts" and "forget" in shown["args_schema"]["properties"]["action"]["enum"]
    assert shown["capabilities"] == ["read", "write", "delete"]


def test_list_json(capsys) -> None:
    assert main(["skills", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"tasks", "notes"} <= {row["name"] for row in rows if row["loaded"]}


def test_inspect_failed_skill_shows_its_load_error(capsys) -> None:
    assert main(["skills", "inspect", "bad_schema", "--skills", str(FIXTURES / "broken")]) == 1
    assert "failed to load" in capsys.readouterr().out
