"""How ``assistant run --frontend console`` starts the terminal chat (the registry's "console",
conversation/routes.py), through channels/run.py as every channel is started."""

from __future__ import annotations

from messaging_llm_bot.channels.console.chat import run_console
from messaging_llm_bot.channels.contract import ChannelRunner, RunOptions
from messaging_llm_bot.conversation.runtime import Runtime


class TerminalChat:
    """The terminal chat as a ``ChannelRunner``: it owns the terminal, so it ends by the user (EOF, /quit,
    Ctrl-C), never by another thread; ``stop`` has nothing to do."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def run(self) -> int:
        return run_console(self.runtime)

    def stop(self, timeout: float) -> None:
        del timeout  # the user ends it at the terminal


def runner(runtime: Runtime, options: RunOptions) -> ChannelRunner:
    del options  # it is always alone in its process and handles Ctrl-C itself
    return TerminalChat(runtime)
