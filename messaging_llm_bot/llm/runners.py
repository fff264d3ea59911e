"""Runner records of the `llm` config section: which OpenAI-compatible endpoints to call."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

# Keys a runner's extra_body may not override: they define the call itself.
RESERVED_KEYS = frozenset({"model", "messages", "stream"})
STRUCTURED_OUTPUT = ("auto", "json_schema", "json_object", "off")
TOOL_TRANSPORTS = ("json", "native", "auto")


@dataclass
class RunnerConfig:
    """One OpenAI-compatible endpoint; `extra_body` is merged into every request body."""

    name: str
    base_url: str
    model: str
    api_key: str = ""
    extra_body: dict = field(default_factory=dict)
    timeout_seconds: float = 120
    structured_output: str = "auto"  # how to ask for schema-shaped answers (llm/structured.py)
    tool_transport: str = "json"  # skills as the JSON protocol or as native tools (llm/tools.py)

    def __repr__(self) -> str:
        # The default dataclass repr would print the API key into logs and tracebacks.
        key = "***" if self.api_key else ""
        return (
            f"RunnerConfig(name={self.name!r}, base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key={key!r}, extra_body={self.extra_body!r}, timeout_seconds={self.timeout_seconds!r}, "
            f"structured_output={self.structured_output!r}, tool_transport={self.tool_transport!r})"
        )


def runners_from_config(llm_config: dict) -> list[RunnerConfig]:
    """Runner records from the `llm` config section; raises ValueError naming a bad entry.

    `api_key_env` may name an environment variable holding the key, so the key need not
    sit in a config file. A top-level `base_url`/`model` without `runners` is one runner.
    """
    entries = llm_config.get("runners")
    if not entries and llm_config.get("base_url"):
        entries = [llm_config]
    if not isinstance(entries, list) or not entries:
        raise ValueError(
            'llm.runners: no model server is configured; add one, e.g. [{"name": "local", '
            '"base_url": "http://127.0.0.1:8080/v1", "model": "<model name>"}], or run make setup'
        )
    runners = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"llm.runners[{i}]: must be an object with base_url and model")
        name = str(entry.get("name") or f"runner{i + 1}")
        for key in ("base_url", "model"):
            if not entry.get(key):
                raise ValueError(f"llm.runners[{i}].{key}: missing (runner {name!r})")
        api_key = entry.get("api_key") or ""
        if not api_key and entry.get("api_key_env"):
            api_key = os.environ.get(str(entry["api_key_env"]), "")
        extra = entry.get("extra_body") or {}
        if not isinstance(extra, dict):
            raise ValueError(f"llm.runners[{i}].extra_body: must be an object (runner {name!r})")
        ignored = sorted(RESERVED_KEYS & extra.keys())
        if ignored:
            log.warning("llm runner %r: extra_body keys %s are ignored", name, ", ".join(ignored))
            extra = {k: v for k, v in extra.items() if k not in RESERVED_KEYS}
        timeout = entry.get("timeout_seconds")
        structured = str(entry.get("structured_output") or "auto")
        if structured not in STRUCTURED_OUTPUT:
            raise ValueError(
                f"llm.runners[{i}].structured_output: must be one of {', '.join(STRUCTURED_OUTPUT)} (runner {name!r})"
            )
        transport = str(entry.get("tool_transport") or "json")
        if transport not in TOOL_TRANSPORTS:
            raise ValueError(
                f"llm.runners[{i}].tool_transport: must be one of {', '.join(TOOL_TRANSPORTS)} (runner {name!r})"
            )
        runners.append(
            RunnerConfig(
                name=name,
                base_url=str(entry["base_url"]).rstrip("/"),
                model=str(entry["model"]),
                api_key=str(api_key),
                extra_body=dict(extra),
                timeout_seconds=float(timeout) if timeout is not None else 120.0,
                structured_output=structured,
                tool_transport=transport,
            )
        )
    return runners
