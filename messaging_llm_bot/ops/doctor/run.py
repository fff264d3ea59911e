"""The doctor's run: every check in order, each guarded (a crashing check is a failure, not the end)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from messaging_llm_bot.ops.doctor.check import FAIL, SKIP, Check, Context
from messaging_llm_bot.ops.doctor.config import check_config
from messaging_llm_bot.ops.doctor.email import check_email
from messaging_llm_bot.ops.doctor.hooks import check_hooks
from messaging_llm_bot.ops.doctor.jobs import check_jobs
from messaging_llm_bot.ops.doctor.matrix import check_matrix
from messaging_llm_bot.ops.doctor.mcp import check_mcp
from messaging_llm_bot.ops.doctor.model import check_runners
from messaging_llm_bot.ops.doctor.plugins import check_plugins
from messaging_llm_bot.ops.doctor.python import check_python
from messaging_llm_bot.ops.doctor.serve import check_serve
from messaging_llm_bot.ops.doctor.services import check_services
from messaging_llm_bot.ops.doctor.signal import check_signal
from messaging_llm_bot.ops.doctor.spending import check_spending
from messaging_llm_bot.ops.doctor.telegram import check_telegram
from messaging_llm_bot.ops.doctor.workspace import check_workspace

CHECKS: tuple[Callable[[Context], list[Check]], ...] = (
    check_config,
    check_telegram,
    check_signal,
    check_email,
    check_matrix,
    check_runners,
    check_workspace,
    check_spending,
    check_jobs,
    check_plugins,
    check_mcp,
    check_serve,
    check_hooks,
    check_services,
    check_python,
)
#: Checks that need a valid config.
_NEEDS_CONFIG = {
    check_telegram,
    check_signal,
    check_email,
    check_matrix,
    check_runners,
    check_plugins,
    check_spending,
    check_jobs,
    check_mcp,
    check_serve,
    check_hooks,
    check_services,
}


def run_checks(config_path: str | Path, workspace_path: str | Path, *, quick: bool = False) -> list[Check]:
    """Every check in order; a check that needs the config is skipped when it is invalid."""
    ctx = Context(Path(config_path), Path(workspace_path).expanduser(), quick)
    results: list[Check] = []
    for check in CHECKS:
        if check in _NEEDS_CONFIG and ctx.config is None:
            results.append(Check(check.__name__.removeprefix("check_"), SKIP, "skipped: the config is not valid"))
            continue
        try:
            results.extend(check(ctx))
        except Exception as exc:  # a crashing check is a finding, not the end of the report
            results.append(
                Check(
                    check.__name__.removeprefix("check_"), FAIL, f"the check itself failed: {type(exc).__name__}: {exc}"
                )
            )
    return results
