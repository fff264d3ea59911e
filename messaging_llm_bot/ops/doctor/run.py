"""The doctor's run: every check in order, each guarded (a crashing check is a failure, not the end).

The chat channels' checks come from their folders (``ops/channels/<name>/doctor.py``), in the registry's order,
right after the config's: ops/doctor names no channel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from messaging_llm_bot.ops.channels.doctor import FAIL, SKIP, Check, Context, channel_checks
from messaging_llm_bot.ops.doctor.channels import check_chat_channels
from messaging_llm_bot.ops.doctor.config import check_config
from messaging_llm_bot.ops.doctor.documents import check_documents
from messaging_llm_bot.ops.doctor.hooks import check_hooks
from messaging_llm_bot.ops.doctor.jobs import check_jobs
from messaging_llm_bot.ops.doctor.mcp import check_mcp
from messaging_llm_bot.ops.doctor.model import check_runners
from messaging_llm_bot.ops.doctor.plugins import check_plugins
from messaging_llm_bot.ops.doctor.python import check_python
from messaging_llm_bot.ops.doctor.serve import check_serve
from messaging_llm_bot.ops.doctor.services import check_services
from messaging_llm_bot.ops.doctor.spending import check_spending
from messaging_llm_bot.ops.doctor.workspace import check_workspace

CheckFunction = Callable[[Context], list[Check]]

#: The checks after the channels', in order.
LATER: tuple[CheckFunction, ...] = (
    check_runners,
    check_workspace,
    check_documents,
    check_spending,
    check_jobs,
    check_plugins,
    check_mcp,
    check_serve,
    check_hooks,
    check_services,
    check_python,
)
#: Checks that run whatever the config says (the config's own, too).
_ALWAYS: tuple[CheckFunction, ...] = (check_config, check_workspace, check_python)


def checks_in_order() -> list[tuple[str, CheckFunction]]:
    """(name, check): the config, the chat channels, each channel's own, then the rest."""
    named: list[tuple[str, CheckFunction]] = [("config", check_config), ("chat channels", check_chat_channels)]
    named += channel_checks()
    named += [(check.__name__.removeprefix("check_"), check) for check in LATER]
    return named


def run_checks(config_path: str | Path, workspace_path: str | Path, *, quick: bool = False) -> list[Check]:
    """Every check in order; a check that needs the config is skipped when it is invalid."""
    ctx = Context(Path(config_path), Path(workspace_path).expanduser(), quick)
    results: list[Check] = []
    channels = {check for _name, check in channel_checks()}
    for name, check in checks_in_order():
        if check not in _ALWAYS and ctx.config is None:
            if check not in channels:  # the chat channels' line says it for them all
                results.append(Check(name, SKIP, "skipped: the config is not valid"))
            continue
        try:
            results.extend(check(ctx))
        except Exception as exc:  # a crashing check is a finding, not the end of the report
            results.append(Check(name, FAIL, f"the check itself failed: {type(exc).__name__}: {exc}"))
    return results
