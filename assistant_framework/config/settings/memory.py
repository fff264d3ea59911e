"""The ``memory`` section: the turn log and index, recall, fact extraction, episodes, profile, ranking."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import flag, nests, number, reads, strings, whole
from assistant_framework.json_types import JsonSchema

#: A chat id as a list of chats takes it: its text, or a number (read as its text).
CHAT_ID: JsonSchema = {"type": ["string", "integer"]}


@dataclass(frozen=True)
class RecallSettings:
    """``memory.recall``: memory hits put before each model call."""

    enabled: bool = field(default=True, metadata=reads(flag))
    limit: int = field(default=5, metadata=reads(whole, minimum=0))
    budget_chars: int = field(default=1500, metadata=reads(whole, minimum=0))
    #: Turns still in the prompt's history are not recalled again.
    skip_recent_turns: int = field(default=12, metadata=reads(whole, minimum=0))
    min_score: float = field(default=0.0, metadata=reads(number, minimum=0))


@dataclass(frozen=True)
class EpisodesSettings:
    """``memory.episodes`` (or ``"episodes": false``): a summary per conversation and settled day."""

    enabled: bool = field(default=True, metadata=reads(flag))
    settle_minutes: float = field(default=60.0, metadata=reads(number, minimum=0))
    max_per_run: int = field(default=5, metadata=reads(whole, minimum=1))
    min_turns: int = field(default=2, metadata=reads(whole, minimum=1))


@dataclass(frozen=True)
class ProfileSettings:
    """``memory.profile`` (or ``"profile": false``): ``profile.md`` refreshed from facts and episodes."""

    enabled: bool = field(default=True, metadata=reads(flag))
    refresh_hours: float = field(default=24.0, metadata=reads(number, minimum=0))


@dataclass(frozen=True)
class RankingSettings:
    """``memory.ranking``: the search's weights and caps (docs/memory.md explains each)."""

    segment_weight: float = field(default=0.5, metadata=reads(number, minimum=0, maximum=100))
    neighbour_weight: float = field(default=0.3, metadata=reads(number, minimum=0, maximum=100))
    segment_top: int = field(default=3, metadata=reads(whole, minimum=0, maximum=1000))
    candidates: int = field(default=200, metadata=reads(whole, minimum=1, maximum=100_000))
    time_weight: float = field(default=0.3, metadata=reads(number, minimum=0, maximum=100))
    date_weight: float = field(default=1.0, metadata=reads(number, minimum=0, maximum=100))
    whole_segment_weight: float = field(default=0.3, metadata=reads(number, minimum=0, maximum=100))
    # Per rowid range of a conversation scope, only the newest N matching rows get a BM25 score (FTS5
    # scores every match before ORDER BY ... LIMIT, ~5 us a row). Above the longest LoCoMo conversation
    # (680 turns), so that benchmark never hits the cap. 0 = score all.
    newest_cap: int = field(default=1000, metadata=reads(whole, minimum=0, maximum=10_000_000))
    # Owner data (notes, facts, collector items) in a conversation's scope: only its newest N matches get
    # a score. At 100k files its newest 300 kept recall at 1M turns under 20 ms (docs/benchmarks.md).
    owner_cap: int = field(default=300, metadata=reads(whole, minimum=0, maximum=10_000_000))
    # An unscoped search scores at most this many matches in all (near 5,000 x ~2 us of bm25() at 1M
    # turns); a workspace with fewer matches for a query gets the full ranking. 0 = score all.
    unscoped_cap: int = field(default=5000, metadata=reads(whole, minimum=0, maximum=10_000_000))


@dataclass(frozen=True)
class MemorySettings:
    """The ``memory`` section."""

    enabled: bool = field(default=True, metadata=reads(flag))
    recall: RecallSettings = field(default_factory=RecallSettings, metadata=nests(RecallSettings))
    extract_facts: bool = field(default=True, metadata=reads(flag))
    #: Fact extraction waits until no turn ran for this long (0: right after each turn).
    extract_idle_seconds: float = field(default=20.0, metadata=reads(number, minimum=0))
    episodes: EpisodesSettings = field(
        default_factory=EpisodesSettings, metadata=nests(EpisodesSettings, shorthand="enabled")
    )
    profile: ProfileSettings = field(
        default_factory=ProfileSettings, metadata=nests(ProfileSettings, shorthand="enabled")
    )
    #: How often the search index picks up files changed behind its back.
    refresh_seconds: float = field(default=60.0, metadata=reads(number, minimum=0))
    ranking: RankingSettings = field(default_factory=RankingSettings, metadata=nests(RankingSettings))
    #: Chat ids or fnmatch patterns never logged or recalled (ids given as numbers are read as text).
    exclude_chats: tuple[str, ...] = field(default=(), metadata=reads(strings, each=CHAT_ID))
    share_owner_data_with: tuple[str, ...] = field(default=(), metadata=reads(strings, each=CHAT_ID))
    #: The weight of embedding search fused with BM25 (needs llm.embeddings).
    semantic_weight: float = field(default=0.0, metadata=reads(number, minimum=0))
