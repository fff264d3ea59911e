"""The ``jobs`` section: limits of the jobs the assistant schedules (docs/jobs.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import number, reads, whole


@dataclass(frozen=True)
class JobsSettings:
    """The ``jobs`` section (docs/jobs.md)."""

    #: Jobs ``jobs/jobs.json`` may hold; the skill refuses one more.
    max_jobs: int = field(default=50, metadata=reads(whole, minimum=0))
    #: The shortest interval between two runs of a ``prompt`` job (each run is a model turn).
    min_prompt_interval_minutes: int = field(default=15, metadata=reads(whole, minimum=1))
    #: Model runs (``prompt`` jobs) per local day; a run beyond it is recorded as skipped.
    max_model_runs_per_day: int = field(default=48, metadata=reads(whole, minimum=0))
    #: The most runs ``catch_up: "all"`` makes up after downtime (the newest ones).
    catch_up_max: int = field(default=10, metadata=reads(whole, minimum=1))
    #: How often ``jobs/jobs.json`` is read again (a run due sooner is started at its time).
    poll_seconds: float = field(default=15.0, metadata=reads(number, above=0))
