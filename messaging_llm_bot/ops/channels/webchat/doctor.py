"""The doctor's web chat checks, when ``web.chat`` is on: the bot serves the page (``web.enabled``), where the
page listens (beyond this machine the token is all that guards the owner's chat), and how one signs in."""

from __future__ import annotations

from assistant_framework.config.settings import WebSettings
from assistant_framework.hints import CLI
from assistant_framework.web.auth import MIN_TOKEN_CHARS, TOKEN_FILE, is_loopback
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, WARN, Check, Context

DOCS = "docs/web.md#chat"


def checks(ctx: Context) -> list[Check]:
    web = ctx.settings.web
    if not web.chat:
        return []
    if not web.enabled:
        return [
            Check(
                "webchat",
                WARN,
                "web.chat is on but web.enabled is off: the bot serves no page, so there is no Chat page",
                f"`{CLI} config set web.enabled true` ({DOCS})",
            )
        ]
    host = f"[{web.host}]" if ":" in web.host else web.host
    lines = [Check("webchat", OK, f"the Chat page is http://{host}:{web.port}/chat, served by the bot")]
    lines.append(_address(web, host))
    lines.append(_sign_in(ctx, web))
    return lines


def _address(web: WebSettings, host: str) -> Check:
    if is_loopback(web.host):
        return Check("webchat address", OK, f"listens on {host}:{web.port}: this machine only")
    return Check(
        "webchat address",
        WARN,
        f"listens on {host}:{web.port}, beyond this machine: the access token is all that guards the owner's chat",
        f"`{CLI} config set web.host 127.0.0.1`, or put the page behind a TLS proxy (web.trusted_proxies; {DOCS})",
    )


def _sign_in(ctx: Context, web: WebSettings) -> Check:
    configured = web.token.strip()
    if configured and len(configured) < MIN_TOKEN_CHARS:
        return Check(
            "webchat sign-in",
            FAIL,
            f"web.token has {len(configured)} characters, fewer than {MIN_TOKEN_CHARS}: the page does not start",
            f"set a longer one, or remove web.token and one is generated into {TOKEN_FILE}",
        )
    if configured:
        return Check("webchat sign-in", OK, "with the token in web.token (a session cookie after that)")
    stored = ctx.workspace_path / TOKEN_FILE
    if stored.is_file():
        return Check("webchat sign-in", OK, f"with the token in {stored} (a session cookie after that)")
    return Check("webchat sign-in", OK, f"a token is generated into {stored} at the first start, and printed once")
