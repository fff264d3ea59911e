"""Config checks beyond JSON Schema: what the bot would otherwise refuse only at start.

Each check returns ``(json_path, message)`` pairs; ``validate_config`` turns the path into
the file that holds it, so ``config validate`` names file and key for every one of them.
"""

from __future__ import annotations

import difflib
import ipaddress
from collections.abc import Iterable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from assistant_framework.config.errors import ConfigData, JsonPath, format_json_path, shown_key
from assistant_framework.config.schema import root_schema


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'telegram'?)`` for a close match, else the known names."""
    options = sorted(set(known))
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(options)})" if options else ""


def unknown_key(path: JsonPath) -> str | None:
    """Why ``path`` (``("llm", "max_token")``) names no config key, with a suggestion, or None when the schema
    knows it (or cannot tell: a plugin's section, a map of names such as ``policy.skills``)."""
    node: Any = root_schema()
    for depth, part in enumerate(path):
        if not isinstance(node, dict):
            return None
        if isinstance(part, int):
            node = node.get("items")
            continue
        known = node.get("properties") or {}
        if part in known:
            node = known[part]
            continue
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            node = extra
            continue
        if depth == 0:  # the top level takes only the known sections
            return f"unknown config section {shown_key(part)!r}{did_you_mean(str(part), known)}"
        if extra is False:
            close = difflib.get_close_matches(part, sorted(known), n=1, cutoff=0.6)
            if close:
                hint = f" (did you mean {format_json_path((*path[:depth], close[0], *path[depth + 1 :]))!r}?)"
            else:
                where = format_json_path(path[:depth]) if depth else "the config"
                hint = f" ({where} has: {', '.join(sorted(known))})"
            return f"unknown config key {format_json_path(path)!r}{hint}"
        return None
    return None


def known_sections() -> list[str]:
    """Top-level sections the schema knows (read at call time: the declared sections may change)."""
    return sorted(root_schema().get("properties", {}))


def timezone_error(name: Any) -> str | None:
    """Why ``name`` is not an IANA time zone, or None."""
    if not isinstance(name, str) or not name:
        return None  # the schema reports the type
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return unknown_zone(name)
    return None


def unknown_zone(name: str) -> str:
    """The sentence for a name that is no IANA time zone: the close one when there is ("Europe/Berln"), else
    examples."""
    close = difflib.get_close_matches(name, sorted(available_timezones()), n=1, cutoff=0.8)
    hint = f"did you mean {close[0]!r}?" if close else "e.g. Europe/Berlin, America/New_York, UTC"
    return f"unknown IANA time zone {name!r} ({hint})"


def semantic_errors(data: ConfigData) -> list[tuple[JsonPath, str]]:
    """Unknown sections, time zones, and the start-up checks of the runners, embeddings and webhook."""
    errors: list[tuple[JsonPath, str]] = []
    sections = known_sections()
    for key in data:
        if key not in sections:
            name = shown_key(key)
            shown = f"{name!r}{did_you_mean(key, sections)}" if name == str(key) else name
            errors.append(((key,), f"unknown config section {shown}"))
    runtime = value if isinstance(value := data.get("runtime"), dict) else {}
    problem = timezone_error(runtime.get("timezone"))
    if problem:
        errors.append((("runtime", "timezone"), problem))
    llm = value if isinstance(value := data.get("llm"), dict) else {}
    errors += _runner_errors(llm)
    for part in ("embeddings", "transcription"):
        section = llm.get(part)
        if (
            isinstance(section, dict)
            and section.get("enabled")
            and not (section.get("base_url") and section.get("model"))
        ):
            errors.append((("llm", part), f"enabled but base_url or model is missing (llm.{part} needs both)"))
    errors += mcp_server_errors(data)
    errors += trusted_proxy_errors(data)
    errors += serve_client_errors(data)
    errors += hook_errors(data)
    errors += _telegram_webhook_errors(data)
    return errors


def _runner_errors(llm: ConfigData) -> list[tuple[JsonPath, str]]:
    """``llm.runners``: a name used twice, ``two_step`` without the json transport; ``llm.vision_runner``
    naming no runner."""
    errors: list[tuple[JsonPath, str]] = []
    runners = value if isinstance(value := llm.get("runners"), list) else []
    seen: set[str] = set()
    for index, runner in enumerate(runners):
        runner_name = runner.get("name") if isinstance(runner, dict) else None
        if isinstance(runner_name, str) and runner_name in seen:
            errors.append(
                (("llm", "runners", index, "name"), f"runner name {runner_name!r} is used twice; names pick a runner")
            )
        if isinstance(runner_name, str):
            seen.add(runner_name)
        if isinstance(runner, dict) and runner.get("skill_choice") == "two_step":
            transport = runner.get("tool_transport") or "json"
            if transport != "json":
                errors.append(
                    (
                        ("llm", "runners", index, "skill_choice"),
                        f"two_step needs tool_transport json, not {transport!r} (native tool calls name the skill "
                        "and its arguments in one answer)",
                    )
                )
    vision_runner = llm.get("vision_runner")
    if isinstance(vision_runner, str) and vision_runner and runners and vision_runner not in seen:
        errors.append(
            (
                ("llm", "vision_runner"),
                f"names no runner: {vision_runner!r}{did_you_mean(vision_runner, seen)}",
            )
        )
    return errors


def _telegram_webhook_errors(data: ConfigData) -> list[tuple[JsonPath, str]]:
    """Telegram's webhook mode without the public address Telegram posts to."""
    errors: list[tuple[JsonPath, str]] = []
    telegram = value if isinstance(value := data.get("telegram"), dict) else {}
    if telegram.get("mode") == "webhook":
        webhook = value if isinstance(value := telegram.get("webhook"), dict) else {}
        if not webhook.get("url"):
            errors.append(
                (
                    ("telegram", "webhook", "url"),
                    "mode is webhook, so webhook.url must be the public https:// address Telegram posts to",
                )
            )
    return errors


def trusted_proxy_errors(data: ConfigData) -> list[tuple[JsonPath, str]]:
    """Each ``web.trusted_proxies`` entry that is neither an address nor a network (``10.0.0.0/8``)."""
    web = value if isinstance(value := data.get("web"), dict) else {}
    entries = value if isinstance(value := web.get("trusted_proxies"), list) else []
    errors: list[tuple[JsonPath, str]] = []
    for index, entry in enumerate(entries):
        try:
            ipaddress.ip_network(str(entry).strip(), strict=False)
        except ValueError:
            errors.append((("web", "trusted_proxies", index), f"{entry!r} is not an IP address or network"))
    return errors


def serve_client_errors(data: ConfigData) -> list[tuple[JsonPath, str]]:
    """Two ``serve.clients`` of one name would share a source and a conversation: each name once."""
    serve = value if isinstance(value := data.get("serve"), dict) else {}
    clients = value if isinstance(value := serve.get("clients"), list) else []
    errors: list[tuple[JsonPath, str]] = []
    seen: set[str] = set()
    for index, client in enumerate(clients):
        name = client.get("name") if isinstance(client, dict) else None
        if isinstance(name, str) and name.lower() in seen:
            errors.append((("serve", "clients", index, "name"), f"{name!r} is already a client's name"))
        if isinstance(name, str):
            seen.add(name.lower())
    return errors


def hook_errors(data: ConfigData) -> list[tuple[JsonPath, str]]:
    """Each ``hooks.endpoints`` entry has one secret (``secret`` or ``secret_env``) and does one thing
    (exactly one of ``message``, ``prompt``, ``job``)."""
    hooks = value if isinstance(value := data.get("hooks"), dict) else {}
    endpoints = value if isinstance(value := hooks.get("endpoints"), dict) else {}
    errors: list[tuple[JsonPath, str]] = []
    for name, entry in endpoints.items():
        if not isinstance(entry, dict):
            continue
        secrets = [key for key in ("secret", "secret_env") if entry.get(key)]
        if len(secrets) != 1:
            errors.append(
                (("hooks", "endpoints", name), "needs exactly one of secret or secret_env (prefer secret_env)")
            )
        does = [key for key in ("message", "prompt", "job") if entry.get(key)]
        if len(does) != 1:
            found = f" (it has {', '.join(does)})" if does else ""
            errors.append((("hooks", "endpoints", name), f"needs exactly one of message, prompt or job{found}"))
    return errors


_STDIO_KEYS = ("command", "args", "env", "cwd")
_HTTP_KEYS = ("url", "headers")


def mcp_server_errors(data: ConfigData) -> list[tuple[JsonPath, str]]:
    """Each ``mcp.servers`` entry is either a command the assistant starts or a URL it connects to."""
    mcp = value if isinstance(value := data.get("mcp"), dict) else {}
    servers = value if isinstance(value := mcp.get("servers"), dict) else {}
    errors: list[tuple[JsonPath, str]] = []
    for name, server in servers.items():
        if not isinstance(server, dict):
            continue  # the schema reports the type
        stdio = [key for key in _STDIO_KEYS if key in server]
        http = [key for key in _HTTP_KEYS if key in server]
        if "command" not in server and "url" not in server:
            errors.append(
                (
                    ("mcp", "servers", name),
                    "needs command (a server the assistant starts) or url (a streamable HTTP server)",
                )
            )
        elif stdio and http:
            errors.append(
                (
                    ("mcp", "servers", name),
                    f"has both {', '.join(stdio)} (a server the assistant starts) and {', '.join(http)} "
                    "(a server it connects to): keep one kind",
                )
            )
    return errors
