"""The doctor's Telegram checks: the token (getMe), the allowlist, the webhook's secret. Only when Telegram is
used (it has a token): without one, the allowlist and webhook are nobody's concern (ops/doctor says so once when
no chat channel is configured at all)."""

from __future__ import annotations

from assistant_framework.config.settings.bot_api import api_urls
from assistant_framework.hints import CLI
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, Check, Context, allowlist_check, verdict
from messaging_llm_bot.ops.channels.telegram.probe import Unanswered, with_bot


def checks(ctx: Context) -> list[Check]:
    telegram = (ctx.config or {}).get("telegram") or {}
    token = telegram.get("token") or ""
    if not token:
        return []  # Telegram is not used
    fix = f"check telegram.token (`{CLI} setup --token ...`) and the network"
    try:  # at the Bot API server the bot talks to (telegram.base_url as users write it)
        me = with_bot(token, api_urls(ctx.settings.telegram)[0], lambda bot: bot.get_me())
        found = [Check("telegram token", OK, f"valid: the bot is @{me.username} ({me.first_name})")]
    except Unanswered as exc:
        found = [Check("telegram token", FAIL, str(exc), fix)]
    fill = f"`{CLI} setup` finds your id, or `{CLI} config set telegram.allowed_user_ids '[ID]'`"
    empty = "telegram.allowed_user_ids is empty: the bot answers no one"
    found.append(
        allowlist_check("allowlist", telegram.get("allowed_user_ids") or [], telegram.get("owner_id"), empty, fill)
    )
    if telegram.get("mode") == "webhook":
        open_url = (
            "mode is webhook but telegram.webhook.secret_token is empty: anyone who finds the URL can post updates"
        )
        secret = (telegram.get("webhook") or {}).get("secret_token")
        fix = f'`{CLI} config set telegram.webhook.secret_token "$(openssl rand -hex 32)"`'
        found.append(verdict("webhook secret", "" if secret else open_url, "set", fix))
    return found
