"""The answers of ``assistant setup``: given as flags (``Answers``), already configured (``Current``), and the
checks of one answer.

The values in the git-ignored ``config/local/`` layer are the user's own (a channel reads its own:
ops/channels/<name>/setup.py): setup offers them as the answers' defaults and keeps every one it does not ask
about. The example values of the tracked files are not the user's (the example's ``runtime.timezone`` is UTC),
so they are never offered.
"""

from __future__ import annotations

import argparse
import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.config import LOCAL_DIR, ConfigError, load_config_detailed
from assistant_framework.config.env import env_value
from assistant_framework.json_types import JsonObject

if TYPE_CHECKING:
    from messaging_llm_bot.llm.probe import Probe


@dataclass
class Answers:
    """The flags of ``assistant setup``; None means "ask" (or the default when not interactive)."""

    config: Path
    workspace: Path
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timezone: str | None = None
    test_turn: bool = True
    #: The parsed flags, each channel's own among them (ops/channels/<name>/setup.py); None: their defaults.
    flags: argparse.Namespace | None = None
    interactive: bool = True
    written: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Current:
    """The user's own values, as setup finds them (empty: none yet)."""

    runners: tuple[JsonObject, ...] = ()
    timezone: str | None = None

    @property
    def runner(self) -> JsonObject | None:
        """The first runner of the local layer (the one setup asks about), or None."""
        return copy.deepcopy(self.runners[0]) if self.runners else None

    @classmethod
    def read(cls, config: Path) -> Current:
        """Read a config directory that loads (setup checked it); never raises."""
        local: JsonObject = {}
        if (config / LOCAL_DIR).is_dir():
            try:
                local = load_config_detailed(config / LOCAL_DIR, validate=False, env=False).data
            except ConfigError:
                local = {}
        runners = _section(local, "llm").get("runners")
        runtime = _section(local, "runtime")
        zone = runtime.get("timezone")
        return cls(
            runners=tuple(r for r in (runners if isinstance(runners, list) else []) if isinstance(r, dict)),
            timezone=zone if isinstance(zone, str) and valid_zone(zone) else None,
        )


def _section(data: JsonObject, name: str) -> JsonObject:
    """``data[name]`` when it is an object, else an empty one."""
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a model server's base URL, or None."""
    if not url:
        return "the base URL is empty (e.g. http://127.0.0.1:11434/v1 for Ollama)"
    if not url.startswith(("http://", "https://")) or len(url.split("://", 1)[1].strip("/")) == 0:
        return f"{url!r} is not an http(s) URL (write e.g. http://127.0.0.1:11434/v1)"
    return None


def system_timezone() -> str:
    """The system's IANA zone: $TZ, /etc/timezone, or the /etc/localtime link; UTC when unknown."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    try:
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    except OSError:
        pass
    try:
        link = os.readlink("/etc/localtime")
        if "zoneinfo/" in link:
            candidates.append(link.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        if name and valid_zone(name):
            return name
    return "UTC"


def make_paths(config: str | Path, workspace: str | Path) -> str:
    """What a ``make`` command a hint names needs for these folders: nothing for the defaults, else
    `` CONFIG=... WORKSPACE=...`` (``make setup`` alone would set up ``config/``, not the one in use)."""
    if str(config) == "config" and str(workspace) == "workspace":
        return ""
    return f" CONFIG={config} WORKSPACE={workspace}"


def valid_zone(name: str) -> bool:
    """Whether ``name`` is an IANA time zone this machine knows."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def runner_key(runner: JsonObject | None) -> str:
    """The API key a runner sends: ``api_key`` (a ``${NAME}`` read from the environment), else the
    variable ``api_key_env`` names; "" for none."""
    if not runner:
        return ""
    key = env_value(str(runner.get("api_key") or ""))
    if not key and runner.get("api_key_env"):
        key = os.environ.get(str(runner["api_key_env"]), "")
    return key


def key_hint(result: Probe, runner: JsonObject | None) -> str:
    """What to do about a refused key: which flag gives it, or which variable is unset."""
    if result.status not in (401, 403):
        return ""
    name = str((runner or {}).get("api_key_env") or "")
    if name and not os.environ.get(name) and not (runner or {}).get("api_key"):
        return f"; the variable {name} (llm.runners[0].api_key_env) is not set in this shell"
    return "; give the right one with --api-key"
