"""``assistant hooks list|test``: the hooks outside events call (``POST /hooks/<name>``; docs/actions.md).

``list`` shows each hook: what it does, where its answer goes, its URL and where its secret comes from (never
the secret). ``test NAME`` signs a small body with the hook's secret and posts it to the running bot's
listener, as a sender would: the hook runs for real (a ``prompt`` hook's turn, a ``message``, a job run). The
exchange has one deadline, ``--timeout`` (assistant_framework/http_deadline.py): something on the port that
answers a byte now and then is left at it, in one sentence.
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

from assistant_framework.config import ConfigError, load_config
from assistant_framework.config.settings import HookSettings, HooksSettings, Settings
from assistant_framework.http_deadline import Answer
from messaging_llm_bot.cli.config import Subparsers, add_config_option

#: How long ``test`` waits for the listener's whole answer by default (it answers once the run is accepted, not
#: when it is done).
TEST_TIMEOUT_SECONDS = 30.0
#: The most of an answer ``test`` reads (the listener's is a line of JSON).
MAX_ANSWER_BYTES = 64 * 1024


def register(subparsers: Subparsers) -> None:
    group = subparsers.add_parser("hooks", help="list the hooks outside events call, and call one to test it")
    commands = group.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    list_ = commands.add_parser("list", help="the configured hooks: what each does, its URL, its secret's source")
    add_config_option(list_)
    list_.add_argument("--json", action="store_true", help="the hooks as a JSON list")
    list_.set_defaults(func=cmd_list)

    test = commands.add_parser(
        "test", help="post a signed test body to the running bot's hook NAME (it runs for real: a turn, a message)"
    )
    test.add_argument("name", help="the hook's name in hooks.endpoints")
    add_config_option(test)
    test.add_argument("--body", default=None, help="the body to post (default: a small JSON object naming the test)")
    test.add_argument(
        "--timeout",
        type=_seconds,
        default=TEST_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help=f"wait at most this long for the whole answer (default {TEST_TIMEOUT_SECONDS:g})",
    )
    test.set_defaults(func=cmd_test)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0 (at most 3600)")
    return seconds


def _settings(config: str) -> HooksSettings:
    if not Path(config).exists():
        raise ConfigError(f"{config}: config file or directory does not exist (pass --config)")
    return Settings.from_config(load_config(config)).hooks


def hook_url(settings: HooksSettings, name: str) -> str:
    """Where the hook is called on this machine (a listener on every address is reached on loopback)."""
    host = "127.0.0.1" if settings.listen in ("0.0.0.0", "") else "::1" if settings.listen == "::" else settings.listen
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}/hooks/{name}"


class HookListing(TypedDict):
    """One hook as ``list`` shows it, and ``list --json`` prints it."""

    name: str
    kind: str
    does: str
    chat: str
    secret: str  # where the secret comes from, never the secret
    problem: str | None
    url: str


def describe(hook: HookSettings, url: str) -> HookListing:
    """One hook as ``list`` shows it (the secret's source, never the secret), posted to at ``url``."""
    from assistant_framework.hooks.auth import secret_problem

    does = {"message": hook.message, "prompt": hook.prompt, "job": hook.job}[hook.kind]
    return {
        "name": hook.name,
        "kind": hook.kind,
        "does": does,
        "chat": hook.chat or "the owner's home chat",
        "secret": f"environment variable {hook.secret_env}" if hook.secret_env else "secret in the config",
        "problem": secret_problem(hook, os.environ),
        "url": url,
    }


def cmd_list(args: argparse.Namespace) -> int:
    settings = _settings(args.config)
    hooks = [describe(hook, hook_url(settings, hook.name)) for hook in settings.endpoints.values()]
    if args.json:
        print(json.dumps(hooks, indent=2, ensure_ascii=False))
        return 1 if any(hook["problem"] for hook in hooks) else 0
    if not hooks:
        print("No hooks configured (hooks.endpoints; docs/actions.md).")
        return 0
    for hook in hooks:
        does = " ".join(str(hook["does"]).split())
        does = does if len(does) <= 70 else does[:69] + "…"
        print(f"{hook['name']}: {hook['kind']} {does!r} -> {hook['chat']}")
        print(f"  POST {hook['url']}  (secret: {hook['secret']})")
        if hook["problem"]:
            print(f"  problem: {hook['problem']}")
    return 1 if any(hook["problem"] for hook in hooks) else 0


def cmd_test(args: argparse.Namespace) -> int:
    from assistant_framework.hooks.auth import read_hooks, signature_of

    settings = _settings(args.config)
    if args.name not in settings.endpoints:
        known = ", ".join(sorted(settings.endpoints)) or "none"
        raise ConfigError(f"no hook named {args.name!r} in hooks.endpoints (the hooks: {known})")
    hook = read_hooks(settings)[args.name]
    sent = datetime.now(UTC).isoformat(timespec="seconds")
    body = (
        args.body if args.body is not None else json.dumps({"test": True, "hook": args.name, "sent": sent})
    ).encode()
    url = hook_url(settings, args.name)
    headers = {
        "Content-Type": "application/json",
        "X-Hub-Signature-256": signature_of(hook.secret, body),
        "X-Delivery-Id": f"test-{uuid.uuid4()}",
    }
    answered = _post(url, body, headers, args.timeout)
    if isinstance(answered, str):
        print(answered)
        return 1
    status, text = answered.status, answered.text
    try:
        message = json.loads(text).get("message", text)
    except (ValueError, AttributeError):
        message = text
    print(f"{status}: {message}")
    return 0 if 200 <= status < 300 else 1


def _post(url: str, body: bytes, headers: dict[str, str], seconds: float) -> Answer | str:
    """The listener's whole answer within ``seconds``, or the sentence saying why there is none."""
    import requests

    from assistant_framework.http_deadline import BodyTooLarge, DeadlineExceeded, bounded_request, deadline_session

    with deadline_session(pool_size=1) as session:
        try:
            return bounded_request(
                session, "POST", url, seconds=seconds, max_bytes=MAX_ANSWER_BYTES, data=body, headers=headers
            )
        except DeadlineExceeded:
            return (
                f"No whole answer from {url} within {seconds:g} s (--timeout): the hook may or may not have run; "
                "is the bot (and not something else) listening there?"
            )
        except BodyTooLarge:
            return f"The answer from {url} is larger than {MAX_ANSWER_BYTES} bytes: is the bot listening there?"
        except requests.RequestException as exc:
            return f"Nothing answered at {url} ({type(exc).__name__}): is the bot running with this config?"
