"""The doctor's Telegram checks: the token (getMe), the allowlist, the webhook's secret."""

from __future__ import annotations

from assistant_framework.hints import CLI
from messaging_llm_bot.ops.doctor.check import FAIL, OK, WARN, Check, Context
from messaging_llm_bot.ops.telegram_api import get_me


def check_telegram(ctx: Context) -> list[Check]:
    telegram = (ctx.config or {}).get("telegram") or {}
    token = telegram.get("token") or ""
    checks: list[Check] = []
    if not token:
        checks.append(
            Check(
                "telegram token",
                WARN,
                "no token: only the terminal chat (`make chat`) works",
                f"run `{CLI} setup`, or set TELEGRAM_BOT_TOKEN",
            )
        )
    else:
        answer = get_me(token, base_url=telegram.get("base_url") or None, timeout=10)
        if answer.ok:
            me = answer.result or {}
            checks.append(
                Check(
                    "telegram token", OK, f"valid: the bot is @{me.get('username', '?')} ({me.get('first_name', '')})"
                )
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
                FAIL if token else WARN,
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
