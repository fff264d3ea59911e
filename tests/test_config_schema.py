"""The config's JSON Schema is derived from the settings records: a key's type, default and bounds are
written once, in its record's field (issue 49). Real config files in temporary folders, validated as
``load_config`` and ``config validate`` do."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from assistant_framework.config import ConfigError, load_config, load_config_detailed, validate_config
from assistant_framework.config.settings import LLMSettings, Settings
from assistant_framework.config.settings.fields import nests, reads
from assistant_framework.config.settings.readers import whole
from tests.config_readme import README, readme_differences


@dataclass(frozen=True)
class ChangedLLM(LLMSettings):
    """``llm`` with one key's default (5 -> 7) and bound (at most 50 -> 9) changed in its field."""

    max_skill_rounds: int = field(default=7, metadata=reads(whole, minimum=1, maximum=9))


@dataclass(frozen=True)
class ChangedSettings(Settings):
    llm: ChangedLLM = field(default_factory=ChangedLLM, metadata=nests(ChangedLLM))


def _tree(root: Path, files: dict[str, object]) -> Path:
    root.mkdir()
    for name, value in files.items():
        (root / name).write_text(json.dumps(value))
    return root


def test_a_bound_in_a_records_field_is_checked_naming_file_and_key(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "cfg", {"llm.json": {"max_skill_rounds": 51}, "web.json": {"port": 70000}})
    with pytest.raises(ConfigError) as failed:
        load_config(tree)
    lines = str(failed.value).splitlines()
    assert any(line.endswith("llm.json: max_skill_rounds: 51 is greater than the maximum of 50") for line in lines)
    assert any(line.endswith("web.json: port: 70000 is greater than the maximum of 65535") for line in lines)
    (tree / "llm.json").write_text(json.dumps({"max_skill_rounds": 50}))
    (tree / "web.json").write_text(json.dumps({"port": 0}))
    assert load_config(tree)["llm"]["max_skill_rounds"] == 50


def test_a_changed_default_and_bound_in_a_record_are_what_validation_and_reading_use(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "cfg", {"llm.json": {"max_skill_rounds": 10}})
    loaded = load_config_detailed(tree, validate=False)
    assert validate_config(loaded) == []
    [message] = validate_config(loaded, records=ChangedSettings)
    assert message.endswith("cfg/llm.json: max_skill_rounds: 10 is greater than the maximum of 9")
    (tree / "llm.json").write_text(json.dumps({"max_skill_rounds": 9}))
    assert validate_config(load_config_detailed(tree, validate=False), records=ChangedSettings) == []
    assert ChangedSettings.from_config({}).llm.max_skill_rounds == 7 != Settings.from_config({}).llm.max_skill_rounds


def test_a_changed_default_and_bound_in_a_record_are_seen_by_the_readme_check() -> None:
    text = README.read_text(encoding="utf-8")
    assert readme_differences(text, Settings) == []
    assert readme_differences(text, ChangedSettings) == [
        "llm.max_skill_rounds: default 5 in config/README.md, 7 in the records",
        "llm.max_skill_rounds: values 'integer, 1–50' in config/README.md, 'integer, 1–9' in the records",
    ]


@pytest.mark.parametrize(
    "files,expected",
    [
        # A rule across keys, from a record's SCHEMA_RULES: an enabled channel needs its own account.
        ({"signal.json": {"enabled": True}}, "signal.json: (top level): 'account' is a required property"),
        # A key without a default (runners[].model) is required.
        ({"llm.json": {"runners": [{"name": "a", "base_url": "http://x/v1"}]}}, "'model' is a required property"),
        # An enum from one_of, a list's item pattern from each=, a keyed object's names.
        ({"telegram.json": {"mode": "push"}}, "telegram.json: mode: 'push' is not one of ['polling', 'webhook']"),
        ({"signal.json": {"allowed": ["12345"]}}, "signal.json: allowed[0]: '12345' does not match"),
        ({"mcp.json": {"servers": {"a-b": {"command": "x"}}}}, "mcp.json: servers: 'a-b' does not match"),
        # A reader's type: a boolean is no number.
        ({"runtime.json": {"trace_keep": True}}, "runtime.json: trace_keep: True is not of type 'integer'"),
    ],
)
def test_the_derived_schema_keeps_each_kind_of_check(tmp_path: Path, files: dict[str, object], expected: str) -> None:
    tree = _tree(tmp_path / "cfg", files)
    with pytest.raises(ConfigError) as failed:
        load_config(tree)
    assert expected in str(failed.value)


def test_null_where_the_record_takes_null_is_valid(tmp_path: Path) -> None:
    """``mcp.servers.<name>.tools: null`` is the documented default (every tool): writing it is no error."""
    tree = _tree(tmp_path / "cfg", {"mcp.json": {"servers": {"files": {"command": "x", "tools": None}}}})
    assert load_config(tree)["mcp"]["servers"]["files"]["tools"] is None
    assert Settings.from_config(load_config(tree)).mcp.servers["files"].tools is None


def test_the_runtime_builds_the_records_once_and_hands_them_down(tmp_path: Path) -> None:
    """The agent, the prompt and the skills' context get the runtime's own Settings, at start and after a
    ``/reload`` (no part reads its copy from the config dict again)."""
    from messaging_llm_bot.runtime import build_runtime

    tree = _tree(
        tmp_path / "cfg",
        {
            "llm.json": {"runners": [{"name": "local", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]},
            "memory.json": {"enabled": False},
        },
    )
    runtime = build_runtime(tree, tmp_path / "ws")
    try:
        first = runtime.settings
        assert runtime.agent.settings is first and runtime.agent.prompt.settings is first
        assert runtime.skills.default_context.settings is first
        (tree / "llm.json").write_text(
            json.dumps(
                {
                    "runners": [{"name": "local", "base_url": "http://127.0.0.1:9/v1", "model": "m"}],
                    "max_skill_rounds": 9,
                }
            )
        )
        assert runtime.reload().error is None
        second = runtime.settings
        assert second is not first and second.llm.max_skill_rounds == 9
        assert runtime.agent.settings is second and runtime.agent.prompt.settings is second
        assert runtime.skills.default_context.settings is second
    finally:
        runtime.shutdown(timeout=5)
