"""The assistant framework: what the bot stands on, with no chat and no model client of its own.

The workspace, config and its typed settings, skills and collectors (loading and running the plugins),
memory, jobs, the durable inbox and outbound ledger, MCP, the policy, spending caps, traces, hooks, media
files and the owner's web page. The bot (agent, model client, channels, CLI) is ``messaging_llm_bot``.
"""

from importlib import metadata as _metadata


def version() -> str:
    """The installed package version (``assistant --version``, ``assistant-bot --version``)."""
    try:
        return _metadata.version("assistant-framework")
    except _metadata.PackageNotFoundError:  # run from a source tree without installing
        return "0+unknown"
