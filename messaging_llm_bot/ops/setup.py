"""``assistant setup``: the first run, as plain prompts; every answer can also be given as a flag.

Steps: Telegram token (checked with getMe), the owner's user id (read with getUpdates after the
owner writes to the bot), the model server (the usual local ports probed, models listed), the time
zone, a short test turn. Everything is written to the git-ignored ``config/local/`` layer.
"""

from __future__ import annotations

import getpass
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.config import TOKEN_ENV, ConfigError, load_config_detailed
from assistant_framework.workspace import Workspace
from messaging_llm_bot.llm.probe import LOCAL_SERVERS, Probe, find_local_servers, probe
from messaging_llm_bot.ops.telegram_api import call, get_me, senders


class SetupError(Exception):
    """A step that cannot be completed (bad token, no model server...): exit 2 with this message."""


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
    interactive: bool = True
    written: list[str] = field(default_factory=list)


@dataclass
class Console:
    """Where setup talks: ``say`` prints, ``ask`` reads a line, ``secret`` reads without echo."""

    say: Callable[[str], None] = print
    ask: Callable[[str], str] = input
    secret: Callable[[str], str] = getpass.getpass


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
        if name and _valid_zone(name):
            return name
    return "UTC"


def _valid_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


class Wizard:
    """One run of the setup; each step returns what it decided and says what it did."""

    def __init__(self, answers: Answers, console: Console | None = None) -> None:
        self.a = answers
        self.io = console or Console()
        self.settings: list[tuple[str, object]] = []
        #: Where to look for a local model server (tests point this at their fake).
        self.candidates = LOCAL_SERVERS

    def _ask(self, question: str, default: str = "") -> str:
        if not self.a.interactive:
            return default
        shown = f" [{default}]" if default else ""
        reply = self.io.ask(f"{question}{shown}: ").strip()
        return reply or default

    # -- steps -------------------------------------------------------------------------

    def check_config(self) -> None:
        """The config must load as it is: every answer is written into it, and a broken file
        would refuse the writes only at the end (after the owner's message was read and used up)."""
        from assistant_framework.collectors.check import plugin_schema_errors

        try:
            errors = plugin_schema_errors(load_config_detailed(self.a.config, env=False))
        except ConfigError as exc:
            errors = str(exc).splitlines()
        if errors:
            raise SetupError(
                "the config has errors; fix it first (`assistant config validate` checks it):\n  " + "\n  ".join(errors)
            )

    def telegram(self) -> tuple[str, dict] | None:
        """The token checked with getMe; None to run without Telegram (terminal chat only)."""
        if self.a.no_telegram:
            self.io.say("Telegram: skipped (the terminal chat works without it: `make chat`).")
            return None
        token = self.a.token
        from_env = False
        if token is None and os.environ.get(TOKEN_ENV):
            token, from_env = os.environ[TOKEN_ENV], True
        while True:
            if token is None:
                if not self.a.interactive:
                    self.io.say("Telegram: no --token given; skipped (the terminal chat works: `make chat`).")
                    return None
                self.io.say("Telegram: create a bot with @BotFather (/newbot) and paste its token (empty: skip).")
                token = self.io.secret("Bot token: ").strip()
                if not token:
                    return None
            answer = get_me(token, base_url=self.a.telegram_base_url)
            if answer.ok:
                me = answer.result or {}
                self.io.say(
                    f"Telegram: the token works; your bot is @{me.get('username')} ({me.get('first_name', '')})."
                )
                if not from_env:
                    self.settings.append(("telegram.token", token))
                if self.a.telegram_base_url:
                    self.settings.append(("telegram.base_url", self.a.telegram_base_url))
                    if self.a.telegram_base_url.rstrip("/").endswith("/bot"):  # the usual layout of a Bot API server
                        files = self.a.telegram_base_url.rstrip("/")[: -len("bot")] + "file/bot"
                        self.settings.append(("telegram.base_file_url", files))
                return token, me
            if not self.a.interactive:
                raise SetupError(f"Telegram: {answer.error}")
            self.io.say(f"Telegram: {answer.error}")
            token = None

    def owner(self, token: str, me: dict) -> int:
        """The owner's numeric id: given, or read from the first private message sent to the bot."""
        if self.a.owner_id is not None:
            return self.a.owner_id
        typed = self._ask("Your numeric Telegram user id (empty: find it by writing to the bot)")
        if typed:
            if not typed.lstrip("-").isdigit():
                raise SetupError(f"owner id {typed!r} is not a number")
            return int(typed)
        self.io.say(
            f"Now send any message to @{me.get('username')} from your own Telegram account "
            f"(waiting up to {self.a.wait_seconds:g} s)..."
        )
        deadline = time.monotonic() + self.a.wait_seconds
        while True:
            answer = call(
                token,
                "getUpdates",
                {"timeout": 2, "allowed_updates": ["message"]},
                base_url=self.a.telegram_base_url,
                timeout=15,
            )
            if not answer.ok:
                raise SetupError(
                    f"Telegram: reading messages failed: {answer.error} "
                    "(another running bot, or a webhook, takes them: stop it or pass --owner-id)"
                )
            found = senders(answer.result or [])
            if found:
                chosen = self._pick_sender(found)
                # Confirm what was read, so the bot does not answer the setup message on its first start.
                last = max(u["update_id"] for u in answer.result)
                call(token, "getUpdates", {"offset": last + 1, "timeout": 0}, base_url=self.a.telegram_base_url)
                return chosen
            if time.monotonic() >= deadline:
                raise SetupError("Telegram: no message arrived; run setup again, or pass --owner-id ID")

    def _pick_sender(self, found: list[dict]) -> int:
        if len(found) == 1 or not self.a.interactive:
            if len(found) > 1:
                names = ", ".join(f"{s['name']} ({s['id']})" for s in found)
                raise SetupError(f"Telegram: several people wrote to the bot ({names}); pass --owner-id ID")
            sender = found[0]
            self.io.say(f"Telegram: got a message from {sender['name']} (id {sender['id']}): {sender['text'][:40]!r}")
            return sender["id"]
        for index, sender in enumerate(found, 1):
            self.io.say(f"  {index}. {sender['name']} (id {sender['id']}): {sender['text'][:40]!r}")
        choice = self._ask("Which one is you", "1")
        if not choice.isdigit() or not 1 <= int(choice) <= len(found):
            raise SetupError(f"no such choice: {choice!r}")
        return found[int(choice) - 1]["id"]

    def model_server(self) -> tuple[str, str, str]:
        """(base_url, model, api_key): given, or chosen among the local servers found."""
        api_key = self.a.api_key or ""
        base_url = self.a.base_url
        if base_url is None:
            self.io.say(
                "Model: looking for local servers (" + ", ".join(f"{n} {u}" for n, u in self.candidates) + ")..."
            )
            found = find_local_servers(candidates=self.candidates)
            for index, (name, result) in enumerate(found, 1):
                models = ", ".join((result.models or [])[:8]) or "models not listed"
                self.io.say(f"  {index}. {name} at {result.base_url}: {models}")
            if not found:
                self.io.say("  none answered.")
                if not self.a.interactive:
                    raise SetupError(
                        "Model: no local model server found; start one (e.g. `ollama serve`) or pass --base-url and "
                        "--model"
                    )
                base_url = self._ask("OpenAI-compatible base URL (ending in /v1)")
                api_key = api_key or self.io.secret("API key (empty: none): ").strip()
            else:
                choice = self._ask("Use which server (number, or a base URL)", "1")
                if choice.isdigit() and 1 <= int(choice) <= len(found):
                    base_url = found[int(choice) - 1][1].base_url
                else:
                    base_url = choice
        if not base_url.startswith(("http://", "https://")):
            raise SetupError(f"Model: {base_url!r} is not an http(s) URL")
        result = probe(base_url, api_key)
        if result.reachable and result.models is None and not base_url.rstrip("/").endswith("/v1"):
            # The usual slip: the server's address without the /v1 of its OpenAI-compatible API.
            with_v1 = base_url.rstrip("/") + "/v1"
            at_v1 = probe(with_v1, api_key)
            if at_v1.reachable and at_v1.models is not None:
                self.io.say(f"Model: {base_url} lists no models, {with_v1} does; using {with_v1}.")
                base_url, result = with_v1, at_v1
        if not result.reachable:
            hint = "; give the right one with --api-key" if result.status in (401, 403) else ""
            raise SetupError(f"Model: {result.error}{hint}")
        model = self.a.model or self._choose_model(result)
        problem = result.model_problem(model)
        if problem:
            raise SetupError(f"Model: {problem}")
        self.io.say(f"Model: {model} at {base_url}.")
        runner = {"name": "local", "base_url": base_url, "model": model}
        if api_key:
            runner["api_key"] = api_key
        self.settings.append(("llm.runners", [runner]))
        return base_url, model, api_key

    def _choose_model(self, result: Probe) -> str:
        models = result.models or []
        if not models:
            if not self.a.interactive:
                raise SetupError("Model: the server lists no models; pass --model NAME")
            return self._ask("Model name")
        if len(models) > 1:
            for index, name in enumerate(models, 1):
                self.io.say(f"  {index}. {name}")
        choice = self._ask("Use which model (number or name)", "1")
        if choice.isdigit() and 1 <= int(choice) <= len(models):
            return models[int(choice) - 1]
        return choice

    def timezone(self) -> str:
        zone = self.a.timezone or self._ask("Your time zone (IANA name)", system_timezone())
        if not _valid_zone(zone):
            raise SetupError(f"unknown IANA time zone {zone!r} (e.g. Europe/Berlin, America/New_York, UTC)")
        self.io.say(f"Time zone: {zone}.")
        self.settings.append(("runtime.timezone", zone))
        return zone

    def test_turn(self, base_url: str, model: str, api_key: str) -> bool:
        """One short completion against the chosen model; prints the answer and the time it took."""
        from messaging_llm_bot.llm.client import LLMClient
        from messaging_llm_bot.llm.errors import LLMError

        runner = {"name": "local", "base_url": base_url, "model": model, "api_key": api_key}
        client = LLMClient({"runners": [runner], "retries_per_runner": 0, "stream": False})
        try:
            done = client.complete([{"role": "user", "content": "Say hello in five words."}], extra={"max_tokens": 40})
        except LLMError as err:
            self.io.say(f"Test turn: FAILED: {err.user_message()}")
            return False
        finally:
            client.close()
        self.io.say(f"Test turn: {done.text.strip()[:200]!r} ({done.elapsed_s:.1f} s)")
        return True

    # -- the whole run -------------------------------------------------------------------

    def run(self) -> int:
        """All steps, then the settings written to the local layer; returns the exit status."""
        from assistant_framework.settings import write_setting

        self.check_config()
        telegram = self.telegram()
        if telegram is not None:
            owner = self.owner(*telegram)
            self.io.say(f"Telegram: only user {owner} may talk to the bot (telegram.allowed_user_ids).")
            self.settings.append(("telegram.allowed_user_ids", [owner]))
        base_url, model, api_key = self.model_server()
        self.timezone()
        ok = self.test_turn(base_url, model, api_key) if self.a.test_turn else True
        for key, value in self.settings:
            try:
                file = write_setting(self.a.config, key, value)
            except ConfigError as exc:
                raise SetupError(f"cannot write {key}: {exc}") from None
            self.a.written.append(str(file))
        Workspace(self.a.workspace)  # setup is one of the commands that creates a workspace
        files = sorted(set(self.a.written))
        self.io.say("Written (git-ignored, private): " + ", ".join(files))
        self.io.say(f"Workspace: {self.a.workspace}")
        paths = ""
        if str(self.a.config) != "config" or str(self.a.workspace) != "workspace":
            paths = f" CONFIG={self.a.config} WORKSPACE={self.a.workspace}"
        self.io.say(
            f"Next: `make run{paths}` starts the bot"
            + (" in Telegram" if telegram else "")
            + f"; `make chat{paths}` talks to it in this terminal; `make doctor{paths}` checks everything."
        )
        return 0 if ok else 1
