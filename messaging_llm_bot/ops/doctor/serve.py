"""The doctor's serve check: the served endpoints' state (docs/serve.md). Quiet when no client is configured
(only ``assistant mcp serve``, the owner's own stdio client, then works): one line per server (MCP, the
OpenAI-compatible chat) and per client, a client whose token cannot be read a failure naming its variable."""

from __future__ import annotations

import os

from assistant_framework.hints import CLI
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, SKIP, Check, Context


def check_serve(ctx: Context) -> list[Check]:
    from assistant_framework.serve.clients import token_problem

    settings = ctx.settings
    clients = settings.serve.clients
    if not clients:
        return []
    web = settings.web
    where = f"http://{web.host}:{web.port}"
    runs = "runs with the bot (web.enabled)" if web.enabled else f"runs with `{CLI} web` (web.enabled is false)"
    checks = [
        Check(
            "serve mcp",
            OK if settings.memory.enabled else SKIP,
            f"stdio: `{CLI} mcp serve` (read-only unless --write); HTTP: {where}/mcp, {runs}"
            + ("" if settings.memory.enabled else "; memory is off (memory.enabled): searches find nothing"),
        ),
        Check(
            "serve chat",
            OK if web.enabled else SKIP,
            f"OpenAI-compatible: {where}/v1/chat/completions and /v1/models, runs with the bot (web.enabled)"
            if web.enabled
            else f"OpenAI-compatible {where}/v1/ needs the bot's page: web.enabled is false "
            f"(`{CLI} web` alone answers it 503)",
            "" if web.enabled else f"`{CLI} config set web.enabled true`, then restart the bot",
        ),
    ]
    for client in clients:
        name = f"serve client {client.name}"
        problem = token_problem(client, os.environ)
        if problem is not None:
            checks.append(Check(name, FAIL, problem, f"set {client.token_env} in the assistant's environment (.env)"))
            continue
        can = "reads and writes" if client.write else "reads only"
        skills = f"chat skills: {', '.join(client.skills)}" if client.skills else "chats without skills"
        where_chats = "in the owner's own chat" if client.owner else f"in its own conversation api:{client.name}"
        checks.append(Check(name, OK, f"token from {client.token_env}; {can}; {skills}, {where_chats}"))
    return checks
