"""Calls to hooks (assistant_framework/hooks) made into runs, like a scheduled job's (docs/actions.md).

A ``prompt`` hook's call is a turn of the assistant in the owner's chat: its prompt, then the posted body
quoted as outside content (the turn is untrusted: a call the policy guards is refused, no one is there to
confirm). A ``message`` hook's text is sent as is. Either enters the durable inbox as a job run's item under
the call's run id (``JobRun`` with ``hook``), through the process's one job router to the channel of the
hook's ``chat``: the reply is recorded before it is sent and delivered through the ledger, so a crash anywhere
delivers it once, and the inbox takes a run id once. A ``job`` hook asks for a run of that job now. Prompt
runs count against ``jobs.max_model_runs_per_day`` as a prompt job's do.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from assistant_framework.hooks.deliveries import Deliveries
from assistant_framework.hooks.listener import HookCall, HookListener, Outcome
from assistant_framework.jobs import JobStore
from assistant_framework.schedules import to_iso
from assistant_framework.stores import NotFoundError
from messaging_llm_bot.agent.prompt import quote_outside
from messaging_llm_bot.conversation.job_router import NotRunning, job_router
from messaging_llm_bot.conversation.job_runs import JobRun
from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)

#: The most of a posted body the prompt shows (characters); the rest is said to be cut.
BODY_CHARS = 16_000


def body_text(body: bytes) -> str:
    """The posted body as the prompt shows it: UTF-8 (an undecodable byte replaced), cut to ``BODY_CHARS``."""
    text = body.decode("utf-8", "replace").strip() or "(empty body)"
    if len(text) > BODY_CHARS:
        text = f"{text[:BODY_CHARS]}\n[... {len(text) - BODY_CHARS} more characters not shown]"
    return text


def hook_run(call: HookCall, now: datetime, timezone_name: str) -> JobRun:
    """The run a ``prompt`` or ``message`` hook's call makes."""
    hook = call.hook.settings
    if hook.kind == "message":
        text, untrusted = hook.message, False
    else:
        quoted = quote_outside(body_text(call.body), f"the body posted to hook {hook.name!r}")
        text, untrusted = f"{hook.prompt}\n\n{quoted}", True
    return JobRun(
        run_id=call.run_id,
        job_id=f"hook:{hook.name}",
        name=hook.name,
        kind=hook.kind,
        text=text,
        planned=to_iso(now),
        late=False,
        timezone=timezone_name,
        untrusted=untrusted,
        hook=True,
    )


class HookRuns:
    """The bot's part of the hooks listener: each new call started as a run (``HookListener``'s ``Start``)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def start(self, call: HookCall) -> Outcome:
        settings = self.runtime.settings
        hook = call.hook.settings
        now = datetime.now(UTC)
        router = job_router(self.runtime)
        if hook.kind == "job":
            store = JobStore(self.runtime.workspace, settings.runtime.timezone, settings.jobs)
            try:
                job = store.get(hook.job)
                store.request_run(job.id, now)
            except NotFoundError:
                log.warning("hooks: %s names no job %r (hooks.endpoints.%s.job)", hook.name, hook.job, hook.name)
                return Outcome(False, 404, f"hook {hook.name!r} names a job that does not exist")
            router.look_soon()
            log.info("hooks: %s: job %s (%s) runs now", hook.name, job.id, job.name)
            return Outcome(True, 202, f"job {job.name!r} runs now")
        try:
            item = router.submit(hook.chat or None, hook_run(call, now, settings.runtime.timezone))
        except NotRunning as err:
            log.warning("hooks: %s: not run: %s", hook.name, err)
            return Outcome(False, 503, "the owner's chat does not run now; send it again later")
        if item is None:
            return Outcome(True, 200, "this delivery was received before; not run again")
        log.info("hooks: %s: run %s accepted", hook.name, call.run_id)
        return Outcome(True, 202, "accepted: the answer goes to the owner's chat")


def start_hooks(runtime: Runtime) -> HookListener | None:
    """Listen for hooks when ``hooks.endpoints`` names any; a hook without a usable secret is a ConfigError
    (raised here, before the bot starts); a port that cannot be bound is logged and the bot runs on."""
    settings = runtime.settings.hooks
    if not settings.endpoints:
        return None
    from assistant_framework.hooks.auth import read_hooks

    hooks = read_hooks(settings)
    listener = HookListener(settings, hooks, Deliveries(runtime.workspace), HookRuns(runtime).start)
    try:
        listener.start()
    except OSError as exc:
        log.error("hooks not listening on %s:%s: %s", settings.listen, settings.port, exc.strerror or exc)
        return None
    log.info("hooks listening on %s (%s)", listener.url, ", ".join(sorted(hooks)))
    runtime.on_shutdown(lambda timeout: listener.stop(min(timeout, 5.0)))
    return listener
