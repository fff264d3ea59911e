"""The answers of ``assistant setup``: given as flags (``Answers``), already configured (``Current``), and the
checks of one answer.

The values in the git-ignored ``config/local/`` layer (and a token or allowlist set anywhere) are the user's
own: setup offers them as the answers' defaults and keeps every one it does not ask about. The example
values of the tracked files are not the user's (the example's ``runtime.timezone`` is UTC), so they are
never offered.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.config import LOCAL_DIR, TOKEN_ENV, ConfigError, load_config_detailed

if TYPE_CHECKING:
    from messaging_llm_bot.llm.probe import Probe

#: A bot token as @BotFather gives it: the bot's id, a colon, then letters, digits, ``_`` and ``-``.
TOKEN_FORM = re.compile(r"\d{1,20}:[A-Za-z0-9_-]{1,100}")


@dataclass
class Answers:
    """The flags of ``assistant setup``; None means "ask" (or the default when not interactive)."""

    config: Path
    workspace: Path
    token: str | None = None
    no_telegram: bool = False
    telegram_base_url: str | None = None
    owner_id: int | None = None
    wait_seconds: float = 120.0
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timezone: str | None = None
    test_turn: bool = True
    #: The email channel (ops/setup/email.py); None: asked (an empty address: no email channel).
    email_address: str | None = None
    email_imap: str | None = None
    email_smtp: str | None = None
    email_security: str | None = None
    email_user: str | None = None
    email_password_env: str | None = None
    email_owner: str | None = None
    #: The Matrix channel (ops/setup/matrix.py); None: not set up.
    matrix_user_id: str | None = None
    matrix_homeserver: str | None = None
    matrix_password_env: str | None = None
    matrix_owner: str | None = None
    interactive: bool = True
    written: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Current:
    """The user's own values, as setup finds them (empty: none yet)."""

    token: str = ""
    allowed_user_ids: tuple[int, ...] = ()
    telegram_base_url: str | None = None
    runners: tuple[dict[str, Any], ...] = ()
    timezone: str | None = None

    @property
    def runner(self) -> dict[str, Any] | None:
        """The first runner of the local layer (the one setup asks about), or None."""
        return copy.deepcopy(self.runners[0]) if self.runners else None

    @classmethod
    def read(cls, config: Path) -> Current:
        """Read a config directory that loads (setup checked it); never raises."""
        local: dict[str, Any] = {}
        if (config / LOCAL_DIR).is_dir():
            try:
                local = load_config_detailed(config / LOCAL_DIR, validate=False, env=False).data
            except ConfigError:
                local = {}
        try:
            effective = load_config_detailed(config, validate=False, env=False).data
        except ConfigError:
            effective = {}
        telegram = _section(effective, "telegram")
        token = os.environ.get(TOKEN_ENV) or telegram.get("token") or ""
        if isinstance(token, str) and token.startswith("${") and token.endswith("}"):
            token = os.environ.get(token[2:-1], "")  # "${NAME}": the value it names, when set
        ids = telegram.get("allowed_user_ids")
        runners = _section(local, "llm").get("runners")
        runtime = _section(local, "runtime")
        zone = runtime.get("timezone")
        base = telegram.get("base_url")
        return cls(
            token=token if isinstance(token, str) else "",
            allowed_user_ids=tuple(
                i for i in (ids if isinstance(ids, list) else []) if isinstance(i, int) and not isinstance(i, bool)
            ),
            telegram_base_url=base if isinstance(base, str) and base else None,
            runners=tuple(r for r in (runners if isinstance(runners, list) else []) if isinstance(r, dict)),
            timezone=zone if isinstance(zone, str) and valid_zone(zone) else None,
        )


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    """``data[name]`` when it is an object, else an empty one."""
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot be a bot token (checked before it is sent anywhere), or None."""
    if TOKEN_FORM.fullmatch(token):
        return None
    return (
        "that does not look like a bot token (@BotFather's tokens are the bot's number, a colon, then letters "
        "and digits, e.g. 123456789:AAH4x...); paste the whole token"
    )


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


def valid_zone(name: str) -> bool:
    """Whether ``name`` is an IANA time zone this machine knows."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def not_a_choice(choice: str, count: int) -> str | None:
    """Why ``choice`` is not one of the numbers 1 to ``count``, or None."""
    if choice.isdigit() and 1 <= int(choice) <= count:
        return None
    return f"no such choice: {choice!r} (a number from 1 to {count})"


def runner_key(runner: dict[str, Any] | None) -> str:
    """The API key a runner sends: ``api_key`` (a ``${NAME}`` read from the environment), else the
    variable ``api_key_env`` names; "" for none."""
    if not runner:
        return ""
    key = str(runner.get("api_key") or "")
    if key.startswith("${") and key.endswith("}"):
        key = os.environ.get(key[2:-1], "")
    if not key and runner.get("api_key_env"):
        key = os.environ.get(str(runner["api_key_env"]), "")
    return key


def key_hint(result: "Probe", runner: dict[str, Any] | None) -> str:
    """What to do about a refused key: which flag gives it, or which variable is unset."""
    if result.status not in (401, 403):
        return ""
    name = str((runner or {}).get("api_key_env") or "")
    if name and not os.environ.get(name) and not (runner or {}).get("api_key"):
        return f"; the variable {name} (llm.runners[0].api_key_env) is not set in this shell"
    return "; give the right one with --api-key"
