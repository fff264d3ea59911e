"""The doctor's Telegram checks: the token (getMe), the allowlist, the webhook's secret. Only when Telegram is
used (it has a token): without one, the allowlist and webhook are nobody's concern, so a bot on Signal only is
not warned about Telegram at all, and one with no chat channel gets one line saying only the terminal chat
works."""

from __future__ import annotations

from assistant_framework.config.settings import Settings
from assistant_framework.hints import CLI
from messaging_llm_bot.ops.doctor.check import FAIL, OK, WARN, Check, Context
from messaging_llm_bot.ops.telegram_api import get_me


def check_telegram(ctx: Context) -> list[Check]:
    telegram = (ctx.config or {}).get("telegram") or {}
    token = telegram.get("token") or ""
    checks: list[Check] = []
    if not token:
        if Settings.from_config(ctx.config or {}).signal.enabled:
            return []  # Telegram is not used: Signal is the chat channel (its own checks say how it is)
        return [
            Check(
                "telegram token",
                WARN,
                "no chat channel: no telegram.token and Signal is off, so only the terminal chat (`make chat`) works",
                f"run `{CLI} setup`, or set TELEGRAM_BOT_TOKEN",
            )
        ]
    answer = get_me(token, base_url=telegram.get("base_url") or None, timeout=10)
    if answer.ok:
        me = answer.result or {}
        checks.append(
            Check("telegram token", OK, f"valid: the bot is @{me.get('username', '?')} ({me.get('first_name', '')})")
        )
    else:
        checks.append(
            Check(
                "telegram token",
                FAIL,
                answer.error,
                f"check telegram.token (`{CLI} setup --token ...`) and the network",
            )
        )
    allowed = telegram.get("allowed_user_ids") or []
    if not allowed:
        checks.append(
            Check(
                "allowlist",
                FAIL,
                "telegram.allowed_user_ids is empty: the bot answers no one",
                f"`{CLI} setup` finds your id, or `{CLI} config set telegram.allowed_user_ids '[ID]'`",
            )
        )
    else:
        checks.append(
            Check("allowlist", OK, f"{len(allowed)} user(s) allowed; owner {telegram.get('owner_id') or allowed[0]}")
        )
    if telegram.get("mode") == "webhook":
        secret = (telegram.get("webhook") or {}).get("secret_token")
        if not secret:
            checks.append(
                Check(
                    "webhook secret",
                    FAIL,
                    "mode is webhook but telegram.webhook.secret_token is empty: anyone who finds the URL can post "
                    "updates",
                    f'`{CLI} config set telegram.webhook.secret_token "$(openssl rand -hex 32)"`',
                )
            )
        else:
            checks.append(Check("webhook secret", OK, "set"))
    return checks
