"""A section declared with a record of its own (assistant_framework/config/sections.py), as a channel's is: read
typed by ``Settings.section``, and refused when it cannot be one (two records for one name, the framework's own
name, a key without a default). tests/test_channel_walk.py sees a channel's section through every reader."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import pytest

from assistant_framework.config import sections
from assistant_framework.config.schema import root_schema
from assistant_framework.config.sections import SectionError
from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.allowlist import Allowlist
from assistant_framework.config.settings.fields import Record, flag, reads, strings, text, whole


@dataclass(frozen=True)
class PagerSettings(Allowlist):
    enabled: bool = field(default=False, metadata=reads(flag))
    port: int = field(default=7070, metadata=reads(whole, minimum=1))
    allowed: tuple[str, ...] = field(default=(), metadata=reads(strings))
    owner: str | None = field(default=None, metadata=reads(text))


@dataclass(frozen=True)
class NeedsHost:
    host: str = field(metadata=reads(text))


@pytest.fixture
def declare(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, type[Record]]]:
    """A provider of this test's sections, beside the bot's (the list as it was after the test)."""
    given: dict[str, type[Record]] = {}

    def provider() -> Mapping[str, type[Record]]:
        return given

    monkeypatch.setattr(sections, "_providers", [*sections._providers])
    sections.declare(provider)
    yield given


def test_a_declared_sections_record_is_read_typed_by_its_type_or_by_its_name(declare: dict) -> None:
    declare["pager"] = PagerSettings
    settings = Settings.from_config({"pager": {"enabled": True, "allowed": ["ann"]}})
    pager = settings.section(PagerSettings)
    assert pager == PagerSettings(enabled=True, allowed=("ann",)) and pager.owner_id == "ann"
    assert settings.section(Allowlist, "pager") is pager  # a Route line's way: by name, as an Allowlist
    assert Settings().section(PagerSettings) == PagerSettings()  # not in the config: its defaults
    assert Settings.from_config({}) == Settings()
    assert root_schema()["properties"]["pager"]["properties"]["port"] == {"type": "integer", "minimum": 1}
    with pytest.raises(TypeError, match="no NeedsHost"):
        settings.section(NeedsHost, "pager")
    with pytest.raises(LookupError, match="'NeedsHost'"):
        settings.section(NeedsHost)


def test_a_section_that_cannot_be_declared_is_refused(declare: dict) -> None:
    declare["pager"] = NeedsHost
    with pytest.raises(
        SectionError, match=r"config section 'pager' \(tests\.test_config_sections\.NeedsHost\): host has no"
    ):
        sections.declared()
    declare["pager"] = PagerSettings
    sections.declare(lambda: {"pager": NeedsHost})
    with pytest.raises(
        SectionError, match="section 'pager' is declared twice: by tests.test_config_sections.PagerSettings and"
    ):
        sections.declared()


@dataclass(frozen=True)
class ReloadsAHost:
    RELOADED_KEYS: ClassVar = frozenset({"host"})

    port: int = field(default=1, metadata=reads(whole))


def test_a_record_naming_no_key_of_its_own_for_reload_is_refused(declare: dict) -> None:
    declare["pager"] = ReloadsAHost
    with pytest.raises(
        SectionError, match=r"'pager' \(tests\.test_config_sections\.ReloadsAHost\): RELOADED_KEYS names host"
    ):
        sections.declared()


def test_a_declared_section_cannot_take_the_frameworks_own_name(declare: dict) -> None:
    declare["llm"] = PagerSettings
    with pytest.raises(SectionError, match=r"\['llm'\] are the framework's own"):
        root_schema()
