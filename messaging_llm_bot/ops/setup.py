"""``assistant setup``: the first run, as plain prompts; every answer can also be given as a flag.

Steps: Telegram token (checked with getMe), the owner's user id (read with getUpdates after the
owner writes to the bot), the model server (the usual local ports probed, models listed), the time
zone, a short test turn. Each answer is checked when it is given (at a terminal a wrong one is asked
again). Nothing is written until the test turn passed (or ``--no-test``); then the answers go to the
git-ignored ``config/local/`` layer, and every value setup did not ask about stays as it was. The
values already there are offered as the answers' defaults (``setup_answers.Current``).
"""

from __future__ import annotations

import getpass
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from assistant_framework.config import TOKEN_ENV, ConfigError, load_config_detailed
from assistant_framework.workspace import Workspace
from messaging_llm_bot.frontends.telegram.settings import BotApiAddressError, bot_api_urls
from messaging_llm_bot.llm.probe import LOCAL_SERVERS, Probe, find_local_servers, probe
from messaging_llm_bot.ops.setup_answers import (
    Current,
    base_url_problem,
    key_hint,
    not_a_choice,
    runner_key,
    system_timezone,
    token_problem,
    valid_zone,
)
from messaging_llm_bot.ops.telegram_api import call, get_me, senders

__all__ = ["Answers", "Console", "SetupError", "Wizard", "system_timezone"]


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


class Wizard:
    """One run of the setup; each step returns what it decided and says what it did."""

    def __init__(self, answers: Answers, console: Console | None = None) -> None:
        self.a = answers
        self.io = console or Console()
        self.settings: list[tuple[str, object]] = []
        #: What the config already holds (read once the config is known to load).
        self.current = Current()
        #: Where to look for a local model server (tests point this at their fake).
        self.candidates = LOCAL_SERVERS
        #: The owner's id when it was read from a message (said again if nothing is written).
        self.found_owner: int | None = None

    def _ask(self, question: str, default: str = "") -> str:
        if not self.a.interactive:
            return default
        shown = f" [{default}]" if default else ""
        reply = self.io.ask(f"{question}{shown}: ").strip()
        return reply or default

    def _ask_until(self, question: str, default: str, problem: Callable[[str], str | None]) -> str:
        """An answer that passes ``problem``: at a terminal a wrong one is said and asked again;
        without one (``--yes``) the default is checked and a wrong one ends the setup."""
        while True:
            reply = self._ask(question, default)
            wrong = problem(reply)
            if wrong is None:
                return reply
            if not self.a.interactive:
                raise SetupError(wrong)
            self.io.say(f"  {wrong}; try again.")

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
                "the config has errors; fix it first (`.venv/bin/assistant config validate` checks it):\n  "
                + "\n  ".join(errors)
            )

    def telegram_base_url(self) -> str | None:
        """The Bot API server: ``--telegram-base-url`` as users write it (http://host:8081, with or
        without /bot), else the one configured; None for Telegram's own."""
        given = self.a.telegram_base_url
        if given is None:
            try:
                return bot_api_urls(self.current.telegram_base_url)[0] if self.current.telegram_base_url else None
            except BotApiAddressError:
                return self.current.telegram_base_url
        try:
            return bot_api_urls(given)[0]
        except BotApiAddressError as exc:
            raise SetupError(f"--telegram-base-url: {exc}") from None

    def telegram(self) -> tuple[str, dict] | None:
        """The token checked with getMe; None to run without Telegram (terminal chat only) or to keep
        the token (and the allowlist) already configured."""
        if self.a.no_telegram:
            self.io.say("Telegram: skipped (the terminal chat works without it: `make chat`).")
            return None
        base_url = self.telegram_base_url()
        token = self.a.token
        from_env = kept = False
        if token is None and os.environ.get(TOKEN_ENV):
            token, from_env = os.environ[TOKEN_ENV], True
        if token is None and self.current.token:
            if not self.a.interactive:
                self.io.say("Telegram: no --token given; the configured token and allowlist are kept.")
                return None
            self.io.say("Telegram: a bot token is configured; press Enter to keep it, or paste a new one.")
            typed = self.io.secret("Bot token (empty: keep the current one): ").strip()
            token, kept = (typed, False) if typed else (self.current.token, True)
        while True:
            if token is None:
                if not self.a.interactive:
                    self.io.say("Telegram: no --token given; skipped (the terminal chat works: `make chat`).")
                    return None
                self.io.say("Telegram: create a bot with @BotFather (/newbot) and paste its token (empty: skip).")
                token = self.io.secret("Bot token: ").strip()
                if not token:
                    return None
            problem = token_problem(token)
            if problem is not None:
                if not self.a.interactive:
                    raise SetupError(f"Telegram: {problem}")
                self.io.say(f"Telegram: {problem}.")
                token = None
                continue
            answer = get_me(token, base_url=base_url)
            if answer.ok:
                me = answer.result or {}
                self.io.say(
                    f"Telegram: the token works; your bot is @{me.get('username')} ({me.get('first_name', '')})."
                )
                if not from_env and not kept:
                    self.settings.append(("telegram.token", token))
                if base_url and self.a.telegram_base_url is not None:
                    self.settings.append(("telegram.base_url", base_url))
                    self.settings.append(("telegram.base_file_url", bot_api_urls(base_url)[1]))
                return token, me
            if kept:
                self.io.say(f"Telegram: the configured token: {answer.error}; kept as it is, with its allowlist.")
                return None
            if not self.a.interactive:
                raise SetupError(f"Telegram: {answer.error}")
            self.io.say(f"Telegram: {answer.error}")
            token = None

    def owner(self, token: str, me: dict) -> list[int]:
        """The allowlist: the owner's numeric id first (given, typed, or read from the first private
        message sent to the bot), then whoever the allowlist already held."""
        current = list(self.current.allowed_user_ids)
        if self.a.owner_id is not None:
            owner = self.a.owner_id
        elif current and not self.a.interactive:
            return current
        else:

            def not_an_id(text: str) -> str | None:
                if text in ("", "find") or text.lstrip("-").isdigit():
                    return None
                return f"{text!r} is not a number (your numeric user id, e.g. 123456789)"

            if current:
                question = "Your numeric Telegram user id ('find': write to the bot and it is read)"
            else:
                question = "Your numeric Telegram user id (empty: find it by writing to the bot)"
            typed = self._ask_until(question, str(current[0]) if current else "", not_an_id)
            owner = int(typed) if typed not in ("", "find") else self._read_owner(token, me)
        return [owner, *(i for i in current if i != owner)]

    def _read_owner(self, token: str, me: dict) -> int:
        """The id of the first private message sent to the bot within ``--wait`` seconds."""
        base_url = self.telegram_base_url()
        self.io.say(
            f"Now send any message to @{me.get('username')} from your own Telegram account "
            f"(waiting up to {self.a.wait_seconds:g} s)..."
        )
        deadline = time.monotonic() + self.a.wait_seconds
        while True:
            answer = call(
                token, "getUpdates", {"timeout": 2, "allowed_updates": ["message"]}, base_url=base_url, timeout=15
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
                call(token, "getUpdates", {"offset": last + 1, "timeout": 0}, base_url=base_url)
                self.found_owner = chosen
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
        choice = self._ask_until("Which one is you", "1", lambda c: not_a_choice(c, len(found)))
        return found[int(choice) - 1]["id"]

    def model_server(self) -> dict:
        """The runner to write: the server and model given or chosen (at a terminal asked again until
        the server answers and lists the model), the other keys of the configured runner kept."""
        current = self.current.runner
        asked = self.a.base_url is None
        api_key = self.a.api_key
        while True:
            if asked:
                base_url, typed_key = self._choose_server(current)
                api_key = self.a.api_key or typed_key
            else:
                base_url = str(self.a.base_url)
            problem = base_url_problem(base_url)
            if problem is not None:
                if not (asked and self.a.interactive):
                    raise SetupError(f"Model: {problem}")
                self.io.say(f"Model: {problem}; try again.")
                continue
            same_server = current is not None and current.get("base_url") == base_url
            key = api_key if api_key is not None else (runner_key(current) if same_server else "")
            result = probe(base_url, key)
            if result.reachable and result.models is None and not base_url.rstrip("/").endswith("/v1"):
                # The usual slip: the server's address without the /v1 of its OpenAI-compatible API.
                with_v1 = base_url.rstrip("/") + "/v1"
                at_v1 = probe(with_v1, key)
                if at_v1.reachable and at_v1.models is not None:
                    self.io.say(f"Model: {base_url} lists no models, {with_v1} does; using {with_v1}.")
                    base_url, result = with_v1, at_v1
            if not result.reachable:
                error = f"Model: {result.error}{key_hint(result, current if same_server else None)}"
                if not (asked and self.a.interactive):
                    raise SetupError(error)
                self.io.say(error)
                if result.status in (401, 403):
                    api_key = self.io.secret("API key for this server: ").strip()
                continue
            model = self._model(result, current if same_server else None)
            if model is None:
                continue  # at a terminal: the server again
            self.io.say(f"Model: {model} at {base_url}.")
            runner = dict(current) if current else {"name": "local"}
            if not same_server:  # a key is for the server it was given for: never sent to another one
                runner.pop("api_key", None)
                runner.pop("api_key_env", None)
            runner.update(base_url=base_url, model=model)
            if api_key:
                runner["api_key"] = api_key
            self.settings.append(("llm.runners", [runner, *self.current.runners[1:]]))
            return runner

    def _choose_server(self, current: dict | None) -> tuple[str, str | None]:
        """(base URL, API key typed or None): the configured server without a terminal, else one of the
        local servers found or one typed."""
        if current is not None and not self.a.interactive:
            return str(current.get("base_url") or ""), None
        self.io.say("Model: looking for local servers (" + ", ".join(f"{n} {u}" for n, u in self.candidates) + ")...")
        found = find_local_servers(candidates=self.candidates)
        for index, (name, result) in enumerate(found, 1):
            models = ", ".join((result.models or [])[:8]) or "models not listed"
            self.io.say(f"  {index}. {name} at {result.base_url}: {models}")
        configured = str(current.get("base_url") or "") if current else ""
        if not found:
            self.io.say("  none answered.")
            if not self.a.interactive:
                raise SetupError(
                    "Model: no local model server found; start one (e.g. `ollama serve`) or pass --base-url and --model"
                )
            base_url = self._ask("OpenAI-compatible base URL (ending in /v1)", configured)
            if base_url == configured and configured:
                return base_url, None
            return base_url, self.io.secret("API key (empty: none): ").strip()
        urls = [result.base_url for _, result in found]
        default = str(urls.index(configured) + 1) if configured in urls else (configured or "1")
        choice = self._ask("Use which server (number, or a base URL)", default)
        if choice.isdigit() and 1 <= int(choice) <= len(found):
            return urls[int(choice) - 1], None
        return choice, None

    def _model(self, result: Probe, current: dict | None) -> str | None:
        """The model: ``--model``, or chosen from the server's list (shown first); None at a terminal when
        the server should be chosen again."""
        configured = str(current.get("model") or "") if current else ""
        while True:
            model = self.a.model or self._choose_model(result, configured)
            problem = result.model_problem(model)
            if problem is None:
                return model
            if self.a.model is not None or not self.a.interactive:
                raise SetupError(f"Model: {problem}")
            self.io.say(f"Model: {problem}; try again.")

    def _choose_model(self, result: Probe, configured: str) -> str:
        models = result.models or []
        if not models:
            if not self.a.interactive and not configured:
                raise SetupError("Model: the server lists no models; pass --model NAME")
            return self._ask_until("Model name", configured, lambda m: None if m else "a model name is needed")
        for index, name in enumerate(models, 1):
            self.io.say(f"  {index}. {name}")
        default = str(models.index(configured) + 1) if configured in models else "1"
        choice = self._ask("Use which model (number or name)", default)
        if choice.isdigit() and 1 <= int(choice) <= len(models):
            return models[int(choice) - 1]
        return choice

    def timezone(self) -> str:
        """The IANA zone: ``--timezone``, else the configured one (offered at a terminal), else the system's."""
        default = self.current.timezone or system_timezone()
        if self.a.timezone is not None:
            zone = self.a.timezone
            if not valid_zone(zone):
                raise SetupError(f"unknown IANA time zone {zone!r} (e.g. Europe/Berlin, America/New_York, UTC)")
        else:
            zone = self._ask_until(
                "Your time zone (IANA name)",
                default,
                lambda z: (
                    None
                    if valid_zone(z)
                    else f"unknown IANA time zone {z!r} (e.g. Europe/Berlin, America/New_York, UTC)"
                ),
            )
        self.io.say(f"Time zone: {zone}.")
        self.settings.append(("runtime.timezone", zone))
        return zone

    def test_turn(self, runner: dict) -> bool:
        """One short completion against the chosen runner; prints the answer and the time it took."""
        from messaging_llm_bot.llm.client import LLMClient
        from messaging_llm_bot.llm.errors import LLMError

        tried = {**runner, "api_key": runner_key(runner)}
        tried.pop("api_key_env", None)
        client = LLMClient({"runners": [tried], "retries_per_runner": 0, "stream": False})
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
        """All steps, then (when the test turn passed) the settings written to the local layer."""
        from assistant_framework.settings import write_setting

        self.check_config()
        self.current = Current.read(self.a.config)
        telegram = self.telegram()
        if telegram is not None:
            allowed = self.owner(*telegram)
            self.io.say(f"Telegram: only user(s) {', '.join(map(str, allowed))} may talk to the bot.")
            self.settings.append(("telegram.allowed_user_ids", allowed))
        runner = self.model_server()
        self.timezone()
        if self.a.test_turn and not self.test_turn(runner):
            owner = f" --owner-id {self.found_owner}" if self.found_owner is not None else ""
            self.io.say(
                "Nothing was written: the config is as it was. Check the model server and run setup again "
                f"(`make setup`), or save these answers without the test turn: "
                f"`.venv/bin/assistant setup --no-test{owner}`."
            )
            return 1
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
            + (" in Telegram" if telegram or self.current.token else "")
            + f"; `make chat{paths}` talks to it in this terminal; `make doctor{paths}` checks everything."
        )
        return 0
