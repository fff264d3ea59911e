"""What a channel gives ``assistant doctor``: its lines of the report (docs/channels.md, "Writing a channel").

A channel with checks has ``ops/channels/<name>/doctor.py`` with ``checks(ctx: Context) -> list[Check]``:
nothing when the config does not turn it on, else whether its server answers, the login works and the allowlist
is set. ops/doctor finds the module by the registry's name (conversation/routes.py), so a new channel's checks
are a new file, and ops/doctor names no channel. The report's record (every check of ops/doctor builds it) and
the lines the channels' checks share are here.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assistant_framework.config.settings import Settings
from assistant_framework.hints import CLI
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.ops.channels import channel_parts

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"


@dataclass
class Check:
    """One line of the doctor's report."""

    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""


@dataclass
class Context:
    """What the checks share: the paths, the loaded config (None when invalid), the mode."""

    config_path: Path
    workspace_path: Path
    quick: bool
    config: JsonObject | None = None
    _records: tuple[object, Settings] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def settings(self) -> Settings:
        """The config's typed records, built once for the loaded config (the defaults where it is not loaded)."""
        if self._records is None or self._records[0] is not self.config:
            self._records = (self.config, Settings.from_config(self.config or {}))
        return self._records[1]


def allowlist_check(name: str, allowed: Sequence[object], owner: object, empty: str, fix: str) -> Check:
    """The line every channel has about who may write: how many and the owner, or a failure when the list is
    empty (``empty``: what it means, ``fix``: the command that fills it)."""
    if not allowed:
        return Check(name, FAIL, empty, fix)
    return Check(name, OK, f"{len(allowed)} allowed; owner {owner or allowed[0]}")


def allowed_check(
    key: str, example: str, allowed: Sequence[object], owner: object, means: str = "", note: str = ""
) -> Check:
    """``allowlist_check`` for a channel whose config lists who may write in ``key`` ("discord.allowed"): the
    line is "<channel> allowlist", an empty list means no one is answered (``means``: "the assistant answers no
    one" unless said otherwise), and the fix sets it to ``example`` (``note`` after it: "(your user id)")."""
    fix = f"`{CLI} config set {key} '[\"{example}\"]'`" + (f" {note}" if note else "")
    empty = f"{key} is empty: {means or 'the assistant answers no one'}"
    return allowlist_check(f"{key.partition('.')[0]} allowlist", allowed, owner, empty, fix)


def verdict(name: str, problem: str, ok: str, fix: str) -> Check:
    """A line that fails with ``problem`` and ``fix`` when there is a problem, else says ``ok``."""
    return Check(name, FAIL, problem, fix) if problem else Check(name, OK, ok)


def library_missing(name: str, module: str, what: str, extra: str) -> Check | None:
    """A failure when the channel's library (``module``, named ``what``) of the package's ``extra`` does not
    import, else None."""
    try:
        importlib.import_module(module)
    except ImportError:
        return Check(name, FAIL, f"{what} is not installed", f"pip install -e '.[{extra}]'")
    return None


def local_url(listen: str, port: int, path: str) -> str:
    """Where this machine reaches a listener bound to ``listen`` (any address: the loopback)."""
    host = "127.0.0.1" if listen in ("0.0.0.0", "") else "::1" if listen == "::" else listen
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"


@dataclass(frozen=True)
class Handshake:
    """The doctor's line on a platform's URL into the running bot (WhatsApp's webhook, Slack's request URL):
    what the platform sends to prove it (``challenge``), what the running bot's answer shows (``answers``), what
    the platform does while nothing answers (``lost``), what else a wrong answer means (``other``)."""

    name: str  # "whatsapp webhook"
    challenge: str  # "the handshake"
    answers: str  # "the running bot's webhook answers the handshake"
    lost: str  # "Meta's messages wait and are sent again"
    other: str  # "another verify token"
    port_key: str  # "whatsapp.webhook.port"
    docs: str

    def check(self, url: str, port: int, ask: Callable[[str], tuple[int, bool]]) -> Check:
        """``ask(url)``: the answer's HTTP status and whether it proved the bot (httpx.HTTPError: nothing
        answers, a warning: the bot is not running)."""
        import httpx

        try:
            status, answered = ask(url)
        except httpx.HTTPError:
            return Check(
                self.name,
                WARN,
                f"nothing answers at {url}: the bot is not running ({self.lost})",
                f"start it (`make run`), then point your HTTPS proxy at {url} ({self.docs})",
            )
        if answered:
            return Check(self.name, OK, f"{self.answers} at {url}")
        return Check(
            self.name,
            FAIL,
            f"{url} answered {status} to {self.challenge}: another program, or {self.other}",
            f"stop what listens on port {port}, or set {self.port_key} ({self.docs})",
        )


#: ``checks`` in ``ops/channels/<name>/doctor.py``.
ChannelChecks = Callable[[Context], list[Check]]


def channel_checks() -> list[tuple[str, ChannelChecks]]:
    """(channel, its ``checks``) for every channel of the registry that has a ``doctor.py``, in the registry's
    order (a channel without one has nothing to check)."""
    found: list[tuple[str, ChannelChecks]] = []
    for name, module in channel_parts("doctor"):
        checks: ChannelChecks = module.checks
        found.append((name, checks))
    return found
