"""Typed settings: one frozen record per config section, built once per load or ``/reload``.

Each record's fields are its section's keys, and each field's default is that key's default: the
one place it is written. ``config get``/``show`` fill in defaults from these records
(``config/defaults.py``), ``tests/test_config_defaults.py`` holds ``config/README.md`` to them, and
the code reads ``settings.runtime.timezone`` instead of ``config.get("runtime", {}).get(...)``.

Collectors' sections are not here: each collector declares and reads its own. Nor are the sections a plugin
declares with a record of its own (a channel's, config/sections.py): ``Settings.sections`` holds those the
config gives, read into their records, and ``section`` gives one typed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from assistant_framework.config.settings.calendar import CalendarSettings
from assistant_framework.config.settings.chat import MatrixSettings, SignalSettings, TelegramSettings, WebhookSettings
from assistant_framework.config.settings.discord import DiscordSettings
from assistant_framework.config.settings.documents import DocumentSettings
from assistant_framework.config.settings.email import EmailSettings, ImapSettings
from assistant_framework.config.settings.fields import beside, read_record
from assistant_framework.config.settings.fields import nests as _nests
from assistant_framework.config.settings.hooks import HookSettings, HooksSettings
from assistant_framework.config.settings.jobs import JobsSettings
from assistant_framework.config.settings.llm import (
    EmbeddingsSettings,
    LLMSettings,
    RunnerSettings,
    TranscriptionSettings,
)
from assistant_framework.config.settings.mail import MailSettings, SmtpSettings
from assistant_framework.config.settings.mcp import McpSettings, ServerSettings
from assistant_framework.config.settings.memory import (
    EpisodesSettings,
    MemorySettings,
    ProfileSettings,
    RankingSettings,
    RecallSettings,
)
from assistant_framework.config.settings.policy import PolicySettings
from assistant_framework.config.settings.runtime import RuntimeSettings
from assistant_framework.config.settings.search import SearchSettings
from assistant_framework.config.settings.serve import ClientSettings, ServeSettings
from assistant_framework.config.settings.slack import SlackSettings, SlackWebhookSettings
from assistant_framework.config.settings.voice import SpeechSettings, VoiceSettings
from assistant_framework.config.settings.web import WebSettings
from assistant_framework.config.settings.whatsapp import (
    WhatsAppSettings,
    WhatsAppTemplateSettings,
    WhatsAppWebhookSettings,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """Every section the project owns, read from one merged config."""

    llm: LLMSettings = field(default_factory=LLMSettings, metadata=_nests(LLMSettings))
    telegram: TelegramSettings = field(default_factory=TelegramSettings, metadata=_nests(TelegramSettings))
    signal: SignalSettings = field(default_factory=SignalSettings, metadata=_nests(SignalSettings))
    matrix: MatrixSettings = field(default_factory=MatrixSettings, metadata=_nests(MatrixSettings))
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings, metadata=_nests(RuntimeSettings))
    memory: MemorySettings = field(default_factory=MemorySettings, metadata=_nests(MemorySettings))
    policy: PolicySettings = field(default_factory=PolicySettings, metadata=_nests(PolicySettings))
    web: WebSettings = field(default_factory=WebSettings, metadata=_nests(WebSettings))
    search: SearchSettings = field(default_factory=SearchSettings, metadata=_nests(SearchSettings))
    jobs: JobsSettings = field(default_factory=JobsSettings, metadata=_nests(JobsSettings))
    voice: VoiceSettings = field(default_factory=VoiceSettings, metadata=_nests(VoiceSettings))
    mcp: McpSettings = field(default_factory=McpSettings, metadata=_nests(McpSettings))
    serve: ServeSettings = field(default_factory=ServeSettings, metadata=_nests(ServeSettings))
    calendar: CalendarSettings = field(default_factory=CalendarSettings, metadata=_nests(CalendarSettings))
    mail: MailSettings = field(default_factory=MailSettings, metadata=_nests(MailSettings))
    hooks: HooksSettings = field(default_factory=HooksSettings, metadata=_nests(HooksSettings))
    email: EmailSettings = field(default_factory=EmailSettings, metadata=_nests(EmailSettings))
    documents: DocumentSettings = field(default_factory=DocumentSettings, metadata=_nests(DocumentSettings))
    whatsapp: WhatsAppSettings = field(default_factory=WhatsAppSettings, metadata=_nests(WhatsAppSettings))
    slack: SlackSettings = field(default_factory=SlackSettings, metadata=_nests(SlackSettings))
    discord: DiscordSettings = field(default_factory=DiscordSettings, metadata=_nests(DiscordSettings))
    #: The declared sections (config/sections.py) the config gives, each read into its record; not a key.
    sections: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}), metadata=beside())

    @classmethod
    def from_config(cls, data: Mapping[str, object]) -> Settings:
        """The records of a loaded config (``load_config``'s dict), the declared sections' too; a value a record
        cannot take is a ConfigError naming the key (a validated config has none)."""
        from assistant_framework.config.sections import declared

        settings = read_record(cls, data)
        given = {
            name: read_record(record, data[name], where=name) for name, record in declared().items() if name in data
        }
        return dataclasses.replace(settings, sections=MappingProxyType(given)) if given else settings

    def section(self, kind: type[T], name: str = "") -> T:
        """A declared section's record (config/sections.py), its defaults where the config does not give it: by
        its record's type, as the code that declares it reads it (``settings.section(LineChatSettings)``), or by
        its name as an instance of ``kind`` where that type is not imported (a ``Route`` line in the conversation
        service, which imports no channel: ``settings.section(Allowlist, "linechat")``). LookupError: no such
        section is declared; TypeError: its record is no ``kind``."""
        from assistant_framework.config.sections import declared

        records = declared()
        name = name or next((one for one, record in records.items() if record is kind), "")
        if name not in records:
            raise LookupError(f"no config section declares {name or kind.__qualname__!r} (config/sections.py)")
        found = self.sections[name] if name in self.sections else records[name]()
        if not isinstance(found, kind):
            raise TypeError(f"config section {name!r} is read into {type(found).__qualname__}, no {kind.__qualname__}")
        return found


__all__ = [
    "CalendarSettings",
    "ClientSettings",
    "DiscordSettings",
    "DocumentSettings",
    "EmailSettings",
    "EmbeddingsSettings",
    "EpisodesSettings",
    "HookSettings",
    "HooksSettings",
    "ImapSettings",
    "JobsSettings",
    "LLMSettings",
    "MailSettings",
    "MatrixSettings",
    "McpSettings",
    "MemorySettings",
    "PolicySettings",
    "ProfileSettings",
    "RankingSettings",
    "RecallSettings",
    "RunnerSettings",
    "RuntimeSettings",
    "SearchSettings",
    "ServeSettings",
    "ServerSettings",
    "Settings",
    "SignalSettings",
    "SlackSettings",
    "SlackWebhookSettings",
    "SmtpSettings",
    "SpeechSettings",
    "TelegramSettings",
    "TranscriptionSettings",
    "VoiceSettings",
    "WebSettings",
    "WebhookSettings",
    "WhatsAppSettings",
    "WhatsAppTemplateSettings",
    "WhatsAppWebhookSettings",
]
