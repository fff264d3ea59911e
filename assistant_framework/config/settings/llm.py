"""The ``llm`` section: model servers (runners), the call's knobs, embeddings and transcription."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import (
    flag,
    frozen,
    json_object,
    lists,
    maybe,
    nests,
    number,
    one_of,
    reads,
    text,
    whole,
)
from assistant_framework.config.settings.readers import HTTP_URL

#: How a runner's answer is held to the skill protocol (docs/agent.md).
STRUCTURED_OUTPUT = ("auto", "json_schema", "json_object", "off")
#: How the skills travel to a runner: the JSON protocol, native tools, or native when the server takes them.
TOOL_TRANSPORTS = ("json", "native", "auto")
#: How a skill call is asked for: in one answer, or the skill first and its arguments next (agent/choice.py).
SKILL_CHOICES = ("auto", "direct", "two_step")


@dataclass(frozen=True)
class LimitsSettings:
    """``llm.runners[i].limits``: spending caps of one runner (null: no cap); the day and the month are
    those of ``runtime.timezone`` (docs/sessions.md)."""

    daily_tokens: int | None = field(default=None, metadata=reads(maybe(whole), null=True, minimum=0))
    monthly_tokens: int | None = field(default=None, metadata=reads(maybe(whole), null=True, minimum=0))
    daily_cost: float | None = field(default=None, metadata=reads(maybe(number), null=True, minimum=0))
    monthly_cost: float | None = field(default=None, metadata=reads(maybe(number), null=True, minimum=0))

    @property
    def any(self) -> bool:
        """True when at least one cap is set."""
        return any(v is not None for v in (self.daily_tokens, self.monthly_tokens, self.daily_cost, self.monthly_cost))


@dataclass(frozen=True)
class PriceSettings:
    """``llm.runners[i].price``: what a million tokens cost on this runner (for the cost caps and /stats)."""

    input_per_mtok: float = field(default=0.0, metadata=reads(number, minimum=0))
    output_per_mtok: float = field(default=0.0, metadata=reads(number, minimum=0))
    #: A cached prompt token's price; null: the input price.
    cached_input_per_mtok: float | None = field(default=None, metadata=reads(maybe(number), null=True, minimum=0))


@dataclass(frozen=True)
class RunnerSettings:
    """One OpenAI-compatible model server (``llm.runners[i]``)."""

    name: str = field(metadata=reads(text, min_length=1))
    base_url: str = field(metadata=reads(text, pattern=HTTP_URL))
    model: str = field(metadata=reads(text, min_length=1))
    api_key: str = field(default="", metadata=reads(text))
    #: The environment variable holding the key, when ``api_key`` is empty.
    api_key_env: str = field(default="", metadata=reads(text))
    extra_body: Mapping[str, object] = field(default_factory=frozen, metadata=reads(json_object))
    timeout_seconds: float = field(default=120.0, metadata=reads(number, above=0))
    structured_output: str = field(default="auto", metadata=reads(one_of(*STRUCTURED_OUTPUT)))
    tool_transport: str = field(default="json", metadata=reads(one_of(*TOOL_TRANSPORTS)))
    skill_choice: str = field(default="auto", metadata=reads(one_of(*SKILL_CHOICES)))
    #: The model takes images (OpenAI ``image_url`` parts): photos go to it (docs/media.md).
    vision: bool = field(default=False, metadata=reads(flag))
    limits: LimitsSettings = field(default_factory=LimitsSettings, metadata=nests(LimitsSettings))
    price: PriceSettings = field(default_factory=PriceSettings, metadata=nests(PriceSettings))

    def __repr__(self) -> str:
        # The default dataclass repr would print the API key into logs and tracebacks.
        return (
            f"RunnerSettings(name={self.name!r}, base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key={'***' if self.api_key else ''!r})"
        )


@dataclass(frozen=True)
class EmbeddingsSettings:
    """``llm.embeddings``: an OpenAI-compatible ``/embeddings`` endpoint for semantic memory search."""

    enabled: bool = field(default=False, metadata=reads(flag))
    base_url: str = field(default="", metadata=reads(text, pattern=HTTP_URL))
    model: str = field(default="", metadata=reads(text))
    api_key: str = field(default="", repr=False, metadata=reads(text))
    timeout_seconds: float = field(default=30.0, metadata=reads(number, above=0))
    batch: int = field(default=64, metadata=reads(whole, minimum=1))


@dataclass(frozen=True)
class TranscriptionSettings:
    """``llm.transcription``: an OpenAI-compatible ``/audio/transcriptions`` endpoint for voice notes."""

    #: Used whenever base_url and model are set; false turns it off without removing them.
    enabled: bool = field(default=True, metadata=reads(flag))
    base_url: str = field(default="", metadata=reads(text, pattern=HTTP_URL))
    model: str = field(default="", metadata=reads(text))
    api_key: str = field(default="", repr=False, metadata=reads(text))
    language: str | None = field(default=None, metadata=reads(maybe(text), null=True))
    timeout_seconds: float = field(default=120.0, metadata=reads(number, above=0))

    @property
    def usable(self) -> bool:
        """True when voice notes can be transcribed: enabled, with base_url and model."""
        return self.enabled and bool(self.base_url) and bool(self.model)


@dataclass(frozen=True)
class LLMSettings:
    """The ``llm`` section."""

    runners: tuple[RunnerSettings, ...] = field(default=(), metadata=lists(RunnerSettings, min_items=1))
    temperature: float | None = field(default=0.3, metadata=reads(maybe(number), null=True, minimum=0))
    max_tokens: int | None = field(default=800, metadata=reads(maybe(whole), null=True, minimum=1))
    max_skill_rounds: int = field(default=5, metadata=reads(whole, minimum=1, maximum=50))
    max_concurrency: int = field(default=1, metadata=reads(whole, minimum=1, maximum=256))
    stream: bool = field(default=True, metadata=reads(flag))
    retries_per_runner: int = field(default=1, metadata=reads(whole, minimum=0, maximum=10))
    retry_max_wait_seconds: float = field(default=30.0, metadata=reads(number, minimum=0))
    retry_backoff_seconds: float = field(default=1.0, metadata=reads(number, minimum=0))
    background_extra_body: Mapping[str, object] = field(default_factory=frozen, metadata=reads(json_object))
    embeddings: EmbeddingsSettings = field(default_factory=EmbeddingsSettings, metadata=nests(EmbeddingsSettings))
    transcription: TranscriptionSettings = field(
        default_factory=TranscriptionSettings, metadata=nests(TranscriptionSettings)
    )
    #: The runner that answers messages with images ("": the first runner with ``vision: true``).
    vision_runner: str = field(default="", metadata=reads(text))
    #: A photo is downscaled so neither side is longer (pixels) before it goes to the model.
    image_max_side: int = field(default=1568, metadata=reads(whole, minimum=64, maximum=8192))
