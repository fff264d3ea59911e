"""The doctor's Signal checks, when ``signal.enabled``: the signal-cli daemon (it names its version over JSON-RPC,
through the channel's own client) and the allowlist. The config check
already requires ``signal.account`` when Signal is enabled."""

from __future__ import annotations

import asyncio

from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.ops.channels.doctor import Check, Context, allowed_check, verdict

#: Seconds the daemon has to answer each probe.
PROBE_SECONDS = 5.0


def checks(ctx: Context) -> list[Check]:
    signal = ctx.settings.signal
    if not signal.enabled:
        return []
    answered, detail = asyncio.run(_probe(signal.base_url, signal.account))
    daemon = f"`signal-cli -a {signal.account} daemon --http 127.0.0.1:8080`"
    missing = f"no signal-cli daemon answers at {signal.base_url}: {detail}"
    start = f"start it: {daemon} (docs/signal.md), or set signal.base_url"
    found = [verdict("signal daemon", "" if answered else missing, f"{detail} answers at {signal.base_url}", start)]
    means, note = "the bot answers no one on Signal", "(a stranger is told their id)"
    found.append(allowed_check("signal.allowed", "+4915112345678", signal.allowed, signal.owner, means, note))
    return found


async def _probe(base_url: str, account: str) -> tuple[bool, str]:
    """(answered, the daemon's version or why not) for the daemon at ``base_url``."""
    client = SignalClient(base_url, account, timeout=PROBE_SECONDS)
    try:
        version = await client.rpc("version")
    except (SignalRpcError, SignalUnavailable) as err:
        return False, f"the version call failed: {err}"
    finally:
        await client.close()
    number = version.get("version") if isinstance(version, dict) else None
    return True, f"signal-cli {number or '(version unknown)'}"
