"""The doctor's hooks check (docs/actions.md): quiet when no hook is configured; else one line for the
listener and one per hook, a hook whose secret cannot be read a failure naming its key or variable (the bot
would not start with it)."""

from __future__ import annotations

import os

from messaging_llm_bot.ops.channels.doctor import FAIL, OK, Check, Context


def check_hooks(ctx: Context) -> list[Check]:
    from assistant_framework.hooks.auth import secret_problem

    hooks = ctx.settings.hooks
    if not hooks.endpoints:
        return []
    host = f"[{hooks.listen}]" if ":" in hooks.listen else hooks.listen
    checks = [
        Check(
            "hooks",
            OK,
            f"the bot listens on http://{host}:{hooks.port}/hooks/<name>; bodies up to {hooks.max_body_bytes} bytes, "
            f"{hooks.per_minute} calls a minute per hook",
        )
    ]
    for hook in hooks.endpoints.values():
        name = f"hook {hook.name}"
        problem = secret_problem(hook, os.environ)
        if problem is not None:
            where = hook.secret_env or f"hooks.endpoints.{hook.name}.secret"
            checks.append(Check(name, FAIL, problem, f"set {where} (at least 16 characters; .env for a variable)"))
            continue
        source = f"secret from {hook.secret_env}" if hook.secret_env else "secret in the config"
        chat = hook.chat or "the owner's home chat"
        checks.append(Check(name, OK, f"{hook.kind} -> {chat}; {source}"))
    return checks
