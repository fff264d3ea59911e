"""Runs eval cases through the real agent: real prompt assembly, protocol parser and skills.

Each case gets a fresh temporary workspace seeded with the case's files and
history, the built-in (and configured) skills, and a fixed clock, so the run
measures exactly what a user of that model would get.
"""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from assistant_framework.config.settings import Settings
from assistant_framework.evals.cases import EvalCase
from assistant_framework.evals.scoring import CallRecord, CaseResult, score_case
from assistant_framework.json_types import JsonObject
from assistant_framework.media.files_out import FileSender
from assistant_framework.skills import SkillManager
from assistant_framework.spending import SpendingLedger
from assistant_framework.workspace import NotAWorkspaceError, Workspace, existing_workspace
from messaging_llm_bot.agent.history import HistoryStore
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.agent.loop import Agent
from messaging_llm_bot.agent.settings import history_budget_chars
from messaging_llm_bot.llm.client import LLMClient

#: The eval's "now" unless a case sets its own: a Wednesday morning.
DEFAULT_NOW = "2026-06-10T10:00:00"


def eval_llm_config(
    llm_config: JsonObject, *, runner: str | None = None, base_url: str | None = None, model: str | None = None
) -> JsonObject:
    """The llm section to evaluate: one named runner, or an ad-hoc base URL and model."""
    config = copy.deepcopy(llm_config or {})
    runners = list(config.get("runners") or [])
    if runner:
        runners = [r for r in runners if r.get("name") == runner]
        if not runners:
            raise ValueError(f"no runner named {runner!r} in llm.runners")
    if base_url:
        # A different server: keep none of the configured runner's name, key or extra fields (its key
        # must not go to another server, and errors must name what was actually called).
        configured = runners[0] if runners else {}
        first = {"name": "--base-url", "base_url": base_url, "model": model or configured.get("model", "")}
        if not first["model"]:
            raise ValueError("--base-url needs --model (no configured runner to take the model name from)")
        if configured.get("timeout_seconds"):
            first["timeout_seconds"] = configured["timeout_seconds"]
        runners = [first]
    elif model:
        first = dict(runners[0]) if runners else {"name": "eval"}
        first["model"] = model
        runners = [first]
    if not runners:
        raise ValueError("no model runner configured: set llm.runners or pass --base-url and --model")
    config["runners"] = runners[:1] if (runner or base_url or model) else runners
    return config


def counted_client(llm_config: JsonObject, config: JsonObject, workspace: str) -> LLMClient:
    """The model client of ``eval skills`` or ``trace replay``: its calls count against the runners' spending
    caps in ``workspace`` (the bot's ledger: they spend the same money), and a capped runner refuses as it
    does for the bot. Raises NotAWorkspaceError when a runner has caps and ``workspace`` is no workspace;
    without caps a missing workspace counts nothing."""
    llm = LLMClient.from_section(llm_config)
    try:
        found = existing_workspace(workspace)
    except NotAWorkspaceError as exc:
        if any(r.limits.any for r in llm.runners):
            llm.close()
            raise NotAWorkspaceError(f"{exc} A runner has spending caps, which are counted there.") from None
        return llm
    llm.spending = SpendingLedger(found, Settings.from_config(config).runtime.timezone)
    return llm


def _seed(workspace: Workspace, case: EvalCase, settings_budget: int, when: datetime) -> None:
    for rel, content in case.workspace.items():
        if isinstance(content, str):
            workspace.write_text(rel, content)
        else:
            workspace.write_json(rel, content)
    history = HistoryStore(workspace)
    pending_user: str | None = None
    for message in case.history:
        if message["role"] == "user":
            pending_user = message["content"]
        elif pending_user is not None:
            history.append_pair("eval", pending_user, message["content"], budget_chars=settings_budget, when=when)
            pending_user = None


def run_case(
    case: EvalCase, config: JsonObject, llm: LLMClient, skills_loaded: SkillManager | None = None
) -> CaseResult:
    """Run one case in a fresh workspace and score it. ``skills_loaded``: the skills as a manager of the same
    config loaded them (``run_cases`` imports the skill folders once for all cases); None: imported here."""
    settings = Settings.from_config(config)  # once: the zone, the skills and the agent read the same records
    zone = ZoneInfo(settings.runtime.timezone)
    now = datetime.fromisoformat(case.now or DEFAULT_NOW)
    now = now if now.tzinfo else now.replace(tzinfo=zone)
    with tempfile.TemporaryDirectory(prefix="assistant-eval-") as tmp:
        workspace = Workspace(tmp)
        skills = SkillManager.from_config(config, workspace, settings=settings, loaded=skills_loaded)
        agent = Agent(settings, workspace, skills, llm, clock=lambda: now)
        _seed(workspace, case, history_budget_chars(agent.settings.runtime), now)
        started = time.perf_counter()
        try:
            # The owner's chat, as on a channel that takes files: send_file is offered (a file it "sends" goes
            # nowhere), so the prompt is the one a chat's turn gets.
            chat_files = FileSender(workspace, f"eval:{case.id}", lambda one: "eval", 1 << 40)
            result = agent.handle(AgentMessage("eval", case.message, chat_id=0, user_id=0, send_file=chat_files))
        except Exception as exc:  # noqa: BLE001 - one broken case must not stop the suite
            return score_case(case, [], "", today=now.date(), error=f"{type(exc).__name__}: {exc}")
        latency = time.perf_counter() - started
    calls = [CallRecord(skill=c.skill, args=c.args, ok=c.ok, error_kind=c.error_kind) for c in result.skill_calls]
    usage = result.usage or {}
    tokens = None
    if usage.get("prompt_tokens") is not None or usage.get("completion_tokens") is not None:
        tokens = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
    return score_case(
        case,
        calls,
        result.reply,
        today=now.date(),
        latency_s=latency,
        tokens=tokens,
        rounds=result.rounds,
        error=None if result.ok else result.reply,
    )


def run_cases(
    cases: Sequence[EvalCase],
    config: JsonObject,
    *,
    progress: Callable[[int, int, CaseResult], None] | None = None,
    llm: LLMClient | None = None,
) -> list[CaseResult]:
    """Run every case against ``config['llm']`` (one client shared by all cases: ``llm`` when given, which the
    caller closes). Stops before a case when every runner has reached a spending cap (``llm.refusal()``)."""
    config = copy.deepcopy(config)
    # Memory extraction would add model calls of its own; the eval measures skill calling only.
    config.setdefault("memory", {})["enabled"] = False
    # Nobody is there to confirm "ask" calls: the eval measures choosing and filling calls.
    config["policy"] = {"capabilities": {cap: "allow" for cap in ("read", "write", "delete", "network", "send")}}
    client = llm if llm is not None else LLMClient.from_section(config.get("llm") or {})
    results: list[CaseResult] = []
    try:
        # The skill folders imported once for all cases (each case's manager takes them, in its own workspace).
        with tempfile.TemporaryDirectory(prefix="assistant-eval-skills-") as tmp:
            skills = SkillManager.from_config(config, Workspace(tmp))
            for index, case in enumerate(cases, 1):
                if client.refusal() is not None:
                    break
                outcome = run_case(case, config, client, skills)
                results.append(outcome)
                if progress:
                    progress(index, len(cases), outcome)
    finally:
        if llm is None:
            client.close()
    return results
