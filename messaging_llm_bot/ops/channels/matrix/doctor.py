"""The doctor's Matrix checks, when ``matrix.enabled``: the credentials are there, the homeserver answers and
takes the login (on a device of the doctor's own, through the channel's client: ops/channels/matrix/probe.py),
the allowlist is set, and joined rooms with end-to-end encryption are named (the channel cannot read them)."""

from __future__ import annotations

import asyncio

from messaging_llm_bot.channels.matrix.settings import MatrixLogin
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, WARN, Check, Context, allowed_check

DOCS = "docs/matrix.md"


def checks(ctx: Context) -> list[Check]:
    settings = ctx.settings
    if not settings.matrix.enabled:
        return []
    config = settings.matrix
    problem = MatrixLogin.of(config).problem
    means = "the assistant joins no room and answers no one"
    lines = [allowed_check("matrix.allowed", "@you:example.org", config.allowed, config.owner_id, means)]
    if problem:
        return [*lines, Check("matrix login", FAIL, problem, f"set the bot's password or token ({DOCS})")]
    try:  # the channel's library is an extra: without it only this check fails, not the doctor
        from messaging_llm_bot.ops.channels.matrix.probe import probe
    except ImportError as err:
        fix = f"`.venv/bin/pip install -e '.[matrix]'` ({DOCS})"
        return [*lines, Check("matrix homeserver", FAIL, f"the Matrix library is not installed ({err})", fix)]
    found = asyncio.run(probe(config))
    if not found.reached:
        return [*lines, Check("matrix homeserver", FAIL, found.problem, f"check matrix.homeserver ({DOCS})")]
    spec = ", ".join(found.versions[-1:])
    lines.append(Check("matrix homeserver", OK, f"{config.homeserver_url} answers (spec {spec})"))
    if not found.logged_in:
        return [*lines, Check("matrix login", FAIL, found.problem, f"check matrix.user_id and its password ({DOCS})")]
    lines.append(Check("matrix login", OK, f"logged in as {config.user_id}; in {found.rooms} room(s)"))
    if not found.encrypted:
        return [
            *lines,
            Check(
                "matrix encryption", OK, "no joined room is end-to-end encrypted (encrypted rooms are not supported)"
            ),
        ]
    return [
        *lines,
        Check(
            "matrix encryption",
            WARN,
            f"{len(found.encrypted)} joined room(s) are end-to-end encrypted, which this assistant cannot read "
            f"({', '.join(found.encrypted[:3])}): it said so there once",
            f"talk to it in a room with encryption turned off ({DOCS})",
        ),
    ]
