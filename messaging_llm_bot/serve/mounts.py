"""The served endpoints as the bot mounts them on the web server (docs/serve.md): the owner's memory over MCP at
``/mcp``, and the assistant itself at ``/v1/`` (the OpenAI-compatible endpoint) when the bot runs the page."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assistant_framework.config.settings import Settings
from assistant_framework.serve.clients import Client, PerMinute, read_clients
from assistant_framework.web.server import Mount
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.routes import home_channel, home_conversation
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.serve.memory import memory_tools

if TYPE_CHECKING:
    from messaging_llm_bot.agent.guard import ApproveCallback


def served_mounts(
    settings: Settings,
    workspace: Workspace,
    memory: Any,
    refresh_seconds: float | None = None,
    runtime: Runtime | None = None,
) -> list[Mount]:
    """The served endpoints for the web server; a client without a usable token is a ConfigError naming it.
    ``refresh_seconds``: set when the bot runs elsewhere (``assistant web`` alone; see MemoryTools);
    ``runtime``: the bot's, whose agent answers ``/v1/chat/completions`` (without it ``/v1/`` says where to go)."""
    from assistant_framework.serve.http import mcp_mount
    from messaging_llm_bot.serve.openai_api import ChatService, chat_mount

    clients = read_clients(settings.serve)
    # One bound for both servers: a client's MCP calls and chat requests count together.
    per_minute = PerMinute(settings.serve.per_minute)
    service = None
    if runtime is not None:
        home = home_conversation(settings, workspace)

        def conversation_of(client: Client) -> str:
            # A client configured as the owner talks in the owner's home chat; any other in its own.
            return home if client.settings.owner else client.conversation_id

        service = ChatService(
            agent=lambda: runtime.agent,
            conversation_of=conversation_of,
            owner_client=lambda client: client.settings.owner,
            per_minute=per_minute,
            owner_approver=lambda: owner_approver(runtime),
        )
        runtime.on_shutdown(lambda _timeout: service.threads.shutdown(wait=False, cancel_futures=True))
    return [
        mcp_mount(clients, memory_tools(settings, workspace, memory, refresh_seconds), per_minute),
        chat_mount(clients, service),
    ]


def owner_approver(runtime: Runtime) -> ApproveCallback | None:
    """How the owner is asked for a served client's ``ask`` call: in their home channel's chat, whichever channel
    that is (its ``ChannelJobs.ask_owner``); None when it does not run in this process or cannot ask."""
    from messaging_llm_bot.conversation.job_router import job_router  # the bot's scheduler: not for `assistant web`

    return job_router(runtime).owner_approver(home_channel(runtime.settings))
