"""The doctor's MCP check: each configured server started (or reached), its tools and the skills it offers."""

from __future__ import annotations

from messaging_llm_bot.ops.channels.doctor import FAIL, OK, SKIP, WARN, Check, Context


def check_mcp(ctx: Context) -> list[Check]:
    """One line per configured MCP server: started (or reached), its tool count and the skills it offers."""
    from assistant_framework.mcp import McpSkills, mcp_settings

    settings = mcp_settings(ctx.config or {})
    if not settings.servers:
        return []
    source = McpSkills(settings)
    try:
        loaded = source.load()
        statuses = source.statuses()
    finally:
        source.close()
    checks = []
    for status in statuses:
        name = f"mcp {status.name}"
        key = f"mcp.servers.{status.name}"
        if status.error == "disabled":
            checks.append(Check(name, SKIP, f"disabled ({key}.enabled or mcp.enabled is false)"))
            continue
        if not status.answered:
            checks.append(
                Check(
                    name,
                    FAIL,
                    f"{status.transport} {status.where}: did not answer: {status.error}"[:400],
                    f"check {key} (command and args, or url and headers); run the command by hand to see why",
                )
            )
            continue
        offered = ", ".join(status.skills) or "none"
        detail = f"{status.transport} {status.where}: answered, {status.tools} tools; offered as {offered}"[:400]
        problems = [e.error for e in loaded.errors if e.name == f"mcp:{status.name}"]
        if problems:
            checks.append(Check(name, WARN, detail + "; " + "; ".join(problems)[:300], f"fix {key}.tools"))
        else:
            checks.append(Check(name, OK, detail))
    return checks
