"""``assistant doctor``: every check with ok / warn / fail and what to do about it.

Each check is a small function returning ``Check`` records; ``run_checks`` runs them in order
and never raises (a check that crashes is itself reported as a failure).
"""

from __future__ import annotations

import logging
import platform
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

from assistant_framework.config import ConfigError, load_config_detailed, redact
from assistant_framework.workspace import WORKSPACE_MARKER, Workspace
from messaging_llm_bot.llm.probe import probe
from messaging_llm_bot.ops.telegram_api import get_me

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
MIN_FREE_BYTES = 200 * 1024 * 1024
LOW_FREE_BYTES = 2 * 1024 * 1024 * 1024
#: Runtime dependencies whose versions doctor reports (a missing one fails).
DEPENDENCIES = (
    "python-telegram-bot",
    "requests",
    "pyyaml",
    "jsonschema",
    "filelock",
    "telegramify-markdown",
    "feedparser",
    "icalendar",
    "recurring-ical-events",
    "tzdata",
    "apscheduler",
    "croniter",
    "pillow",
)


@dataclass
class Check:
    """One line of the doctor's report."""

    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""


@dataclass
class Context:
    """What the checks share: the paths, the loaded config (None when invalid), the mode."""

    config_path: Path
    workspace_path: Path
    quick: bool
    config: dict | None = None


def check_config(ctx: Context) -> list[Check]:
    from assistant_framework.collectors.check import plugin_schema_errors

    try:
        loaded = load_config_detailed(ctx.config_path)
        errors = plugin_schema_errors(loaded)
    except ConfigError as exc:
        errors = str(exc).splitlines()
        loaded = None
    if errors:
        return [
            Check(
                "config",
                FAIL,
                "; ".join(errors[:5]),
                f"fix the file and key named, then `.venv/bin/assistant config validate --config {ctx.config_path}`",
            )
        ]
    assert loaded is not None  # no errors: the config loaded
    ctx.config = loaded.data
    local = ctx.config_path / "local"
    where = f" (with your settings in {local})" if local.is_dir() else ""
    checks = [Check("config", OK, f"{ctx.config_path} is valid{where}")]
    # A settings file that holds a non-empty secret (redacting changes it) and others may read.
    exposed = [
        f
        for f, raw in loaded.raw.items()
        if f.is_relative_to(local) and f.stat().st_mode & 0o077 and redact(raw) != raw
    ]
    if exposed:
        names = " ".join(str(f) for f in exposed)
        checks.append(
            Check("settings files", WARN, f"{names}: holds a secret and others may read it", f"chmod 600 {names}")
        )
    return checks


def check_telegram(ctx: Context) -> list[Check]:
    telegram = (ctx.config or {}).get("telegram") or {}
    token = telegram.get("token") or ""
    checks: list[Check] = []
    if not token:
        checks.append(
            Check(
                "telegram token",
                WARN,
                "no token: only the terminal chat (`make chat`) works",
                "run `.venv/bin/assistant setup`, or set TELEGRAM_BOT_TOKEN",
            )
        )
    else:
        answer = get_me(token, base_url=telegram.get("base_url") or None, timeout=10)
        if answer.ok:
            me = answer.result or {}
            checks.append(
                Check(
                    "telegram token", OK, f"valid: the bot is @{me.get('username', '?')} ({me.get('first_name', '')})"
                )
            )
        else:
            checks.append(
                Check(
                    "telegram token",
                    FAIL,
                    answer.error,
                    "check telegram.token (`.venv/bin/assistant setup --token ...`) and the network",
                )
            )
    allowed = telegram.get("allowed_user_ids") or []
    if not allowed:
        checks.append(
            Check(
                "allowlist",
                FAIL if token else WARN,
                "telegram.allowed_user_ids is empty: the bot answers no one",
                "`.venv/bin/assistant setup` finds your id, or "
                "`.venv/bin/assistant config set telegram.allowed_user_ids '[ID]'`",
            )
        )
    else:
        checks.append(
            Check("allowlist", OK, f"{len(allowed)} user(s) allowed; owner {telegram.get('owner_id') or allowed[0]}")
        )
    if telegram.get("mode") == "webhook":
        secret = (telegram.get("webhook") or {}).get("secret_token")
        if not secret:
            checks.append(
                Check(
                    "webhook secret",
                    FAIL,
                    "mode is webhook but telegram.webhook.secret_token is empty: anyone who finds the URL can post "
                    "updates",
                    '`.venv/bin/assistant config set telegram.webhook.secret_token "$(openssl rand -hex 32)"`',
                )
            )
        else:
            checks.append(Check("webhook secret", OK, "set"))
    return checks


def _runner_key(runner: dict) -> str:
    from messaging_llm_bot.ops.setup_answers import runner_key  # one reading of a runner's key

    return runner_key(runner)


def check_runners(ctx: Context) -> list[Check]:
    llm = (ctx.config or {}).get("llm") or {}
    runners = llm.get("runners") or []
    if not runners:
        return [
            Check("model", FAIL, "no runner in llm.runners", "`.venv/bin/assistant setup` finds a local model server")
        ]
    checks = []
    for index, runner in enumerate(runners):
        name = f"model {runner.get('name', '?')}"
        result = probe(str(runner.get("base_url", "")), _runner_key(runner), timeout=5)
        problem = result.model_problem(str(runner.get("model", "")))
        key = f"llm.runners[{index}]"
        if problem:
            env_name = str(runner.get("api_key_env") or "")
            if result.status in (401, 403) and env_name and not _runner_key(runner):
                problem += f"; no key was sent: the variable {env_name} (its api_key_env) is not set"
                fix = f"set {env_name} in the environment the bot runs in (or `{key}.api_key`)"
            elif result.status in (401, 403):
                fix = f"fix the API key: `.venv/bin/assistant config set {key}.api_key KEY` (or {key}.api_key_env)"
            elif not result.reachable:
                fix = f"start the server, or fix {key}.base_url"
            else:
                fix = f"pull the model or pick one it offers: `.venv/bin/assistant config set {key}.model NAME`"
            checks.append(Check(name, FAIL, problem, fix))
            continue
        listed = "listed" if result.models is not None else "not checked (no /models list)"
        detail = f"{runner.get('base_url')} reachable, model {runner.get('model')!r} {listed}"
        if not ctx.quick:
            answered, report = _completion_report(runner)
            detail += "; " + report
            if not answered:
                base = str(runner.get("base_url", "")).rstrip("/")
                hint = (
                    f" (OpenAI-compatible servers answer under /v1: try {base}/v1)"
                    if result.models is None and not base.endswith("/v1")
                    else ""
                )
                checks.append(Check(name, FAIL, detail, f"check {key}.base_url{hint} and {key}.model"))
                continue
        checks.append(Check(name, OK, detail))
        if not ctx.quick and runner.get("name") in _vision_names(llm):
            checks.append(_vision_check(runner, key))
    return checks


def _vision_names(llm: dict) -> tuple[str, ...]:
    """The runners a message with images goes to (``llm.vision_runner``, ``vision: true``)."""
    from messaging_llm_bot.llm.runners import runners_from_config, vision_order

    try:
        return vision_order(str(llm.get("vision_runner") or ""), runners_from_config(llm))
    except ValueError:
        return ()


def _vision_check(runner: dict, key: str) -> Check:
    """Send a small red picture and ask its colour: does the runner take images, and does it see them?"""
    import io

    from PIL import Image

    from assistant_framework.media.images import PreparedImage, prepare_image
    from messaging_llm_bot.agent.images import ImageInput, user_content
    from messaging_llm_bot.llm.client import LLMClient
    from messaging_llm_bot.llm.errors import LLMError

    name = f"vision {runner.get('name', '?')}"
    picture = io.BytesIO()
    Image.new("RGB", (64, 64), (220, 20, 20)).save(picture, "PNG")
    prepared = prepare_image(picture.getvalue(), 64)
    assert isinstance(prepared, PreparedImage)
    question = "What colour is this picture? Answer with one word."
    content = user_content(question, (ImageInput("doctor-probe.png", prepared),))
    client = LLMClient({"runners": [runner], "retries_per_runner": 0, "stream": False})
    client_log = logging.getLogger("messaging_llm_bot.llm.client")
    level = client_log.level
    client_log.setLevel(logging.ERROR)  # the check's line reports a failure; the client's would say it twice
    try:
        done = client.complete([{"role": "user", "content": content}], extra={"max_tokens": 10})
    except LLMError as err:
        return Check(
            name,
            FAIL,
            f"a picture was refused: {err.user_message()}",
            f"use a model that takes images on this runner, or remove {key}.vision (and llm.vision_runner)",
        )
    finally:
        client_log.setLevel(level)
        client.close()
    answer = " ".join(done.text.split())[:60]
    if "red" not in answer.lower():
        return Check(
            name,
            WARN,
            f"a red picture was answered with {answer!r} in {done.elapsed_s:.2f} s: the model may not see images",
            f"check that the server loaded the model's vision part (llama.cpp: --mmproj), or remove {key}.vision",
        )
    return Check(name, OK, f"a red picture was seen as {answer!r} in {done.elapsed_s:.2f} s")


def _completion_report(runner: dict) -> tuple[bool, str]:
    """Whether a one-token completion worked, and a report: its time and the structured-output forms accepted."""
    from messaging_llm_bot.llm.client import LLMClient
    from messaging_llm_bot.llm.errors import LLMError

    client = LLMClient({"runners": [runner], "retries_per_runner": 0, "stream": False})
    messages = [{"role": "user", "content": "Reply with OK."}]
    # The check's own line reports a failure, with its fix: the client's log line would say it twice.
    client_log = logging.getLogger("messaging_llm_bot.llm.client")
    level = client_log.level
    client_log.setLevel(logging.ERROR)
    try:
        try:
            done = client.complete(messages, extra={"max_tokens": 1})
        except LLMError as err:
            return False, f"a one-token completion failed: {err.user_message()}"
        accepted = []
        schema = {
            "type": "json_schema",
            "json_schema": {"name": "probe", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
        }
        for label, form in (("json_schema", schema), ("json_object", {"type": "json_object"})):
            try:
                client.complete(messages, extra={"max_tokens": 4, "response_format": form})
                accepted.append(label)
            except LLMError:
                pass
        forms = ", ".join(accepted) or "none (the JSON skill protocol needs none)"
        return True, f"1-token completion in {done.elapsed_s:.2f} s; structured output accepted: {forms}"
    finally:
        client_log.setLevel(level)
        client.close()


def check_spending(ctx: Context) -> list[Check]:
    """Each runner's spending caps: warn from 80 % (background work stops there), and when one is reached."""
    from assistant_framework.config.settings import Settings
    from assistant_framework.spending import BACKGROUND_SHARE, SpendingLedger, cap_rows
    from assistant_framework.workspace import Workspace

    settings = Settings.from_config(ctx.config or {})
    if not any(r.limits.any for r in settings.llm.runners) or not (ctx.workspace_path / WORKSPACE_MARKER).is_dir():
        return []
    ledger = SpendingLedger(Workspace(ctx.workspace_path), settings.runtime.timezone)
    checks = []
    for row in cap_rows(ledger, settings.llm.runners):
        when = row["resets"].replace("T", " ")
        name = f"spending cap {row['runner']}"
        if row["reached"]:
            fix = f"it answers again at {when}; raise llm.runners[].limits.{row['cap']} to use it sooner"
            checks.append(Check(name, WARN, f"{row['text']}: reached, the next runner answers", fix))
        elif row["percent"] >= BACKGROUND_SHARE * 100:
            fix = f"background work (facts, episodes, triage) waits for {when}; turns go on"
            checks.append(Check(name, WARN, f"{row['text']} ({row['percent']:.0f} %)", fix))
        else:
            checks.append(Check(name, OK, f"{row['text']} ({row['percent']:.0f} %), resets {when}"))
    return checks


def check_workspace(ctx: Context) -> list[Check]:
    path = ctx.workspace_path
    if not (path / WORKSPACE_MARKER).is_dir():
        return [
            Check(
                "workspace",
                FAIL,
                f"{path} is not a workspace",
                "`make run` or `.venv/bin/assistant setup` creates it; or pass --workspace",
            )
        ]
    checks = []
    try:
        with tempfile.NamedTemporaryFile(dir=path / WORKSPACE_MARKER, prefix=".doctor-"):
            pass
        checks.append(Check("workspace", OK, f"{path} is writable"))
    except OSError as exc:
        checks.append(
            Check("workspace", FAIL, f"{path} is not writable: {exc.strerror}", "fix the folder's owner or permissions")
        )
    free = shutil.disk_usage(path).free
    gib = free / 1024**3
    if free < MIN_FREE_BYTES:
        checks.append(
            Check(
                "disk space",
                FAIL,
                f"{gib:.2f} GiB free",
                "free some space: writes fail cleanly, but nothing new is remembered",
            )
        )
    elif free < LOW_FREE_BYTES:
        checks.append(Check("disk space", WARN, f"{gib:.2f} GiB free", "free some space soon"))
    else:
        checks.append(Check("disk space", OK, f"{gib:.1f} GiB free"))
    if not ctx.quick:
        checks.append(_index_check(path))
    return checks


def _index_check(path: Path) -> Check:
    index = path / "memory" / "index.sqlite3"
    if not index.exists():
        return Check("memory index", OK, "not built yet (built on first use)")
    try:
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=5) as conn:
            answer = conn.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as exc:
        answer = str(exc)
    if answer != "ok":
        return Check(
            "memory index",
            WARN,
            f"damaged ({answer[:120]})",
            "`.venv/bin/assistant memory reindex` rebuilds it from the files (nothing is lost)",
        )
    return Check("memory index", OK, f"healthy ({index.stat().st_size / 1024:.0f} KiB)")


def check_plugins(ctx: Context) -> list[Check]:
    from assistant_framework.collectors import CollectorManager
    from assistant_framework.skills import SkillManager

    config = ctx.config or {}
    unused = Workspace(Path(tempfile.gettempdir()) / "assistant-doctor-unused", create=False)
    skills = SkillManager.from_config(config, unused)
    checks = []
    if skills.errors:
        checks.append(
            Check(
                "skills",
                FAIL,
                "; ".join(f"{e.name}: {e.error}" for e in skills.errors)[:400],
                "`.venv/bin/assistant skills list` shows each error",
            )
        )
    else:
        checks.append(Check("skills", OK, f"{len(skills.names())} loaded"))
    workspace = Workspace(ctx.workspace_path, create=False)
    collectors = CollectorManager.from_config(config, workspace)
    if collectors.errors:
        checks.append(
            Check(
                "collectors",
                FAIL,
                "; ".join(f"{e.name}: {e.error}" for e in collectors.errors)[:400],
                "`.venv/bin/assistant collectors list` shows each error",
            )
        )
    else:
        checks.append(
            Check("collectors", OK, f"{len(collectors.collectors)} found, {len(collectors.enabled())} enabled")
        )
    if (ctx.workspace_path / WORKSPACE_MARKER).is_dir():
        for row in collectors.status():
            if row.get("enabled") and row.get("consecutive_failures"):
                checks.append(
                    Check(
                        f"collector {row['name']}",
                        WARN,
                        f"{row['consecutive_failures']} failed run(s) in a row: {str(row.get('error') or '')[:200]}",
                        f"`.venv/bin/assistant collectors run {row['name']}` shows the whole error",
                    )
                )
    return checks


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


def check_python(ctx: Context) -> list[Check]:
    checks = []
    version = platform.python_version()
    if sys.version_info < (3, 11):
        checks.append(
            Check(
                "python",
                FAIL,
                f"Python {version}; 3.11 or newer is needed",
                "install Python 3.11+, then `make install`",
            )
        )
    else:
        checks.append(Check("python", OK, f"Python {version} ({sys.executable})"))
    if ctx.quick:
        return checks
    found, missing = [], []
    for name in DEPENDENCIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        checks.append(
            Check("dependencies", FAIL, f"missing: {', '.join(missing)}", "`make install` (or use .venv/bin/assistant)")
        )
    else:
        checks.append(Check("dependencies", OK, ", ".join(found)))
    return checks


CHECKS: tuple[Callable[[Context], list[Check]], ...] = (
    check_config,
    check_telegram,
    check_runners,
    check_workspace,
    check_spending,
    check_plugins,
    check_mcp,
    check_python,
)
#: Checks that need a valid config.
_NEEDS_CONFIG = {check_telegram, check_runners, check_plugins, check_spending, check_mcp}


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


def format_report(checks: list[Check]) -> str:
    """One line per check, the fix indented under it, and a summary line."""
    lines = []
    width = max((len(c.name) for c in checks), default=0)
    for c in checks:
        lines.append(f"[{c.status:^4}] {c.name:<{width}}  {c.detail}")
        if c.fix and c.status in (WARN, FAIL):
            lines.append(f"       {'':<{width}}  -> {c.fix}")
    counts = {s: sum(1 for c in checks if c.status == s) for s in (OK, WARN, FAIL)}
    lines.append(f"\n{counts[OK]} ok, {counts[WARN]} warning(s), {counts[FAIL]} failure(s)")
    return "\n".join(lines)


def as_json(checks: list[Check]) -> list[dict]:
    """The checks as JSON-ready dicts."""
    return [asdict(c) for c in checks]
