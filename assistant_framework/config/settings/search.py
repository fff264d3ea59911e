"""The ``search`` section: the ``web_search`` skill's backend, its key and its bounds."""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import flag, number, one_of, reads, text, whole
from assistant_framework.config.settings.readers import HTTP_URL

BACKENDS = ("searxng", "brave", "tavily", "duckduckgo")


@dataclass(frozen=True)
class SearchSettings:
    """The ``search`` section (docs/skills.md, "Web search")."""

    #: False: no web search at all (a machine offline on purpose): the model is not offered ``web_search``
    #: (its ``REQUIRES_CONFIG``), a call that names it anyway is refused, and the doctor asks no backend.
    enabled: bool = field(default=True, metadata=reads(flag))
    backend: str = field(default="duckduckgo", metadata=reads(one_of(*BACKENDS)))
    #: searxng: the owner's instance; brave/tavily: another API base (empty: the public API).
    url: str = field(default="", metadata=reads(text, pattern=HTTP_URL))
    api_key: str = field(default="", repr=False, metadata=reads(text))
    #: The name of an environment variable holding the key (instead of ``api_key``).
    api_key_env: str = field(default="", metadata=reads(text))
    max_results: int = field(default=5, metadata=reads(whole, minimum=1, maximum=10))
    timeout_seconds: float = field(default=15.0, metadata=reads(number, above=0, maximum=120))
    per_minute: int = field(default=20, metadata=reads(whole, minimum=1, maximum=1000))
