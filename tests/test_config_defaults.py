"""config/README.md and the settings records agree: every key, every default, its values, both ways.

The records (assistant_framework/config/settings/) are where each default, type and bound is written; the
README's tables are what users read (tests/config_readme.py reads them). Then, through the bot: with the
key left out of the config, the running bot does what the README gives as the default.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from assistant_framework.config import load_config
from assistant_framework.config.defaults import default_of, documented_defaults
from assistant_framework.config.schema import root_schema
from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.fields import REQUIRED, documented
from tests.config_readme import README, channel_pages_differences, readme_differences, readme_rows, same


def readme_defaults(text: str) -> dict[str, object]:
    """``section.key`` -> the default the README's table gives (REQUIRED for an empty cell)."""
    return {key: row.default for key, row in readme_rows(text).items()}


def test_every_key_of_the_records_is_documented_with_its_default() -> None:
    documented_in_readme = readme_defaults(README.read_text(encoding="utf-8"))
    in_code = dict(documented(Settings))
    missing = sorted(set(in_code) - set(documented_in_readme))
    assert not missing, f"keys the code reads but config/README.md does not document: {missing}"
    unknown = sorted(set(documented_in_readme) - set(in_code))
    assert not unknown, f"keys config/README.md documents but no settings record has: {unknown}"
    wrong = {
        key: (documented_in_readme[key], value)
        for key, value in in_code.items()
        if not same(documented_in_readme[key], value)
    }
    assert not wrong, f"(README, code) defaults that differ: {wrong}"


def test_every_row_of_the_readme_gives_the_records_default_and_values() -> None:
    """The values column (type and bounds in words) as well as the default, from the same records."""
    assert readme_differences(README.read_text(encoding="utf-8"), Settings) == []


def test_each_channels_own_section_is_documented_in_its_page() -> None:
    """A channel that declares its section in its folder (channels/sections.py) documents its keys in its page,
    docs/<name>.md, held to its record as config/README.md is to the built-in ones (tests/test_channel_walk.py
    sees this check fail on a wrong default)."""
    assert channel_pages_differences(README.parent.parent / "docs") == []


def test_the_readme_reader_sees_a_wrong_default() -> None:
    """The comparison above can fail: a changed default in a table is seen."""
    text = README.read_text(encoding="utf-8")
    assert "| `profile_budget_chars` | 2000 |" in text
    changed = readme_defaults(text.replace("| `profile_budget_chars` | 2000 |", "| `profile_budget_chars` | 1500 |"))
    assert changed["runtime.profile_budget_chars"] == 1500 != dict(documented(Settings))["runtime.profile_budget_chars"]
    both = readme_defaults(text)
    assert both["memory.recall.limit"] == 5 and both["llm.runners[].model"] is REQUIRED
    assert both["llm.stream"] is True and both["telegram.owner_id"] is None


def _schema_keys(schema: dict, prefix: str) -> set[str]:
    keys: set[str] = set()
    for name, sub in (schema.get("properties") or {}).items():
        keys.add(prefix + name)
        for variant in [sub, *(sub.get("oneOf") or [])]:
            if "properties" in variant:
                keys |= _schema_keys(variant, f"{prefix}{name}.")
            items = variant.get("items")
            if isinstance(items, dict) and "properties" in items:
                keys |= _schema_keys(items, f"{prefix}{name}[].")
            by_name = variant.get("additionalProperties")
            if isinstance(by_name, dict) and "properties" in by_name:
                keys |= _schema_keys(by_name, f"{prefix}{name}.<name>.")
    return keys


def test_the_schema_and_the_records_name_the_same_keys() -> None:
    """A key the schema accepts but no record reads would be a setting that does nothing; a key a record
    reads but the schema refuses could never be set."""
    in_schema: set[str] = set()
    for section in (item.name for item in dataclasses.fields(Settings)):  # every section a record owns
        if section != "sections":  # the declared sections the config gives: not a key
            in_schema |= _schema_keys(root_schema()["properties"][section], section + ".")
    in_code = set(dict(documented(Settings)))
    # The schema names a nested object (memory.recall, llm.runners[].limits) as a key too; the records list the
    # keys inside it.
    nested = {key.rsplit(".", 1)[0] for key in in_code if key.count(".") > 1}
    assert sorted(in_schema - in_code - nested) == []
    assert sorted(in_code - in_schema) == []


def test_config_get_gives_the_records_defaults(tmp_path: Path) -> None:
    assert default_of(("runtime", "profile_budget_chars")) == 2000
    assert default_of(("llm", "stream")) is True
    assert documented_defaults()["memory"]["episodes"] == {
        "enabled": True,
        "settle_minutes": 60.0,
        "max_per_run": 5,
        "min_turns": 2,
    }
    with pytest.raises(KeyError):
        default_of(("runtime", "nonsense"))


def test_an_empty_config_reads_as_the_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "config.json"
    empty.write_text("{}")
    settings = Settings.from_config(load_config(empty))
    assert settings == Settings()
    assert settings.runtime.profile_budget_chars == 2000 and settings.llm.stream is True
    assert settings.memory.episodes.enabled and settings.policy.capabilities["delete"] == "ask"


def test_the_readme_names_every_key_that_needs_a_restart() -> None:
    """config/README.md lists the keys that need a restart; the table in config/reloadable.py decides."""
    from assistant_framework.config.reloadable import APPLIED_BY, RELOAD, RESTART, applied_by

    text = README.read_text(encoding="utf-8")
    section = text[text.index("## A running bot") : text.index("YAML aliases")]
    for key, when in APPLIED_BY.items():
        if when == RESTART and "." in key:
            assert f"`{key}`" in section, f"config/README.md does not say {key} needs a restart"
        if when == RELOAD and key.count(".") == 1:  # an exception inside a restart-only section
            assert f"`{key.split('.', 1)[1]}`" in section or key.split(".")[0] in ("llm", "runtime", "memory"), key
    assert "`web.*`" in section and "`telegram.*`" in section and "`signal.*`" in section
    assert applied_by("telegram.allowed_user_ids") == RELOAD and applied_by("telegram.token") == RESTART
    assert applied_by(("llm", "runners", 0, "model")) == RELOAD and applied_by("llm.embeddings.model") == RESTART
    assert applied_by("collectors.rss.enabled") == RELOAD and applied_by("nonsense.key") == RESTART
