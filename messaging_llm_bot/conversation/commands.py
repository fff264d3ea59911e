"""Chat commands shared by the terminal chat and Telegram: text builders, plus a small dispatcher.

The builders are pure functions of the runtime's parts and return Markdown-light text; the
frontends decide how to render it. ``run_command`` maps ``/name args`` to a builder.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant_framework.access import OWNER_ONLY_COMMANDS, command_allowed
from assistant_framework.config.reloadable import ReloadReport
from messaging_llm_bot.conversation.markup import escape_markdown
from messaging_llm_bot.conversation.usage_text import runtime_stats

if TYPE_CHECKING:  # pragma: no cover
    from assistant_framework.skills import SkillManager
    from messaging_llm_bot.agent.sessions import Session
    from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)

#: (command, description) shown by /help.
COMMANDS: list[tuple[str, str]] = [
    ("help", "What I can do and the commands"),
    ("now", "Today at a glance: tasks, reminders, jobs, calendar, birthdays"),
    ("jobs", "Scheduled jobs and their next run"),
    ("skills", "List my skills"),
    ("skill", "Explain one skill: /skill NAME"),
    ("stop", "Stop the answer I am writing now"),
    ("new", "Start a new conversation (the current one is kept)"),
    ("sessions", "This chat's recent conversations"),
    ("resume", "Continue an earlier conversation: /resume N"),
    ("reset", "Clear this conversation's history"),
    ("status", "Model, skills, collectors and health"),
    ("stats", "Token usage and model time, last 30 days"),
    ("model", "The models I can use; switch this chat's: /model NAME, /model default"),
    ("pair", "Let someone in by the code I gave them: /pair CODE"),
    ("drafts", "Skills I drafted for you: /drafts show|approve|discard NAME"),
    ("busy", "What a message does while I answer: /busy steer, /busy interrupt, /busy queue"),
    ("why", "Memories recalled for my last reply"),
    ("voice", "Answer by voice too here: /voice on, /voice off"),
    ("reload", "Reload config, skills and collectors"),
]


#: /status for anyone but the owner in their private chat: no model, skill or collector details.
GUEST_STATUS = "I'm running. Details are only for the owner."


#: /reset's question before the history is cleared (Telegram asks with buttons, the others for a word).
RESET_QUESTION = (
    "This clears the message history of this conversation, so I forget what we talked about here. "
    "Notes, tasks, reminders, learnings and other saved data are kept."
)

#: The replies to /stop.
STOPPING_TEXT = "Stopping the answer I was writing."
NOTHING_TO_STOP_TEXT = "I'm not writing an answer here right now; nothing to stop."


def owner_only_text(command: str) -> str:
    """The reply to an owner-only command from anyone else (or from a group chat)."""
    return f"/{command} is only for the owner, in their private chat with me."


def backlog_text(waiting: int) -> str:
    """The one notice a chat gets when it sends more than ``runtime.max_pending_per_chat`` messages at once."""
    return (
        f"⏳ I still have {waiting} of your messages here to answer, so I'm skipping new ones until I have "
        "caught up. Anything you send meanwhile is not answered: please send it again after my replies."
    )


def reload_text(report: ReloadReport) -> str:
    """The answer to ``/reload``: why it kept the running config, or the changed keys it applied and those
    that wait for a restart (the table in ``assistant_framework/config/reloadable.py``)."""
    if report.error is not None:
        return f"Reload refused; the running configuration is kept.\n\n{report.error}"
    lines = ["Reloaded config, skills and collectors."]
    if report.applied:
        lines.append("Applied: " + ", ".join(f"`{key}`" for key in report.applied))
    if report.needs_restart:
        lines.append(
            "Needs a restart to take effect (until then the bot keeps the running value): "
            + ", ".join(f"`{key}`" for key in report.needs_restart)
        )
    if not report.applied and not report.needs_restart:
        lines.append("No setting changed.")
    return "\n".join(lines)


def has_digest() -> bool:
    """True when the /now digest module is installed."""
    return importlib.util.find_spec("messaging_llm_bot.conversation.digest") is not None


def help_text(skill_names: list[str], *, with_now: bool | None = None, owner_data: bool = True) -> str:
    """What the assistant does and the command list; ``skill_names`` are the ones this chat can use
    (``Agent.offered_skills``), and only the owner's own chat hears of the owner-only commands."""
    show_now = (has_digest() if with_now is None else with_now) and owner_data
    skills = ", ".join(skill_names) if skill_names else "none here"
    if owner_data:
        intro = (
            "I'm your personal assistant. Write to me in plain language: I take notes, keep tasks, reminders "
            f"and birthdays, remember what you tell me, and use my skills ({skills})."
        )
    else:
        intro = f"I'm an assistant. Write to me in plain language; the skills I can use in this chat: {skills}."
    lines = [intro, "", "Commands:"]
    lines += [
        f"/{name} — {desc}"
        for name, desc in COMMANDS
        if (name != "now" or show_now) and command_allowed(name, owner_data)
    ]
    return "\n".join(lines)


def skills_text(skills: SkillManager, offered: list[str] | None = None, *, owner_data: bool = True) -> str:
    """One line per skill this chat can use (``offered``: ``Agent.offered_skills``; None: every loaded
    skill), plus, for the owner's own chat only, the skills that failed to load (paths, errors)."""
    catalog = [c for c in skills.catalog() if offered is None or c["name"] in offered]
    if catalog:
        lines = ["Skills:"] + [f"- {c['name']} — {c['description']}" for c in catalog]
    else:
        lines = ["No skills are loaded." if offered is None else "No skills are available in this chat."]
    errors = list(getattr(skills, "errors", []) or []) if owner_data else []
    if errors:
        lines += ["", "Failed to load:"] + [f"- {e.name}: {e.error}" for e in errors]
    if catalog:
        lines += ["", "Details: /skill NAME"]
    return "\n".join(lines)


def skill_text(skills: SkillManager, name: str, offered: list[str] | None = None) -> str:
    """A skill's help (its README's "What it does"), or the closest names for an unknown one. A skill
    this chat cannot use (not in ``offered``) is unknown here: its name is not even confirmed."""
    name = name.strip()
    if not name:
        return "Usage: /skill NAME (see /skills for the names)."
    known = skills.names() if offered is None else offered
    skill = skills.get(name) if name in known else None
    if skill is None:
        close = skills.closest(name, among=known)
        hint = f" Did you mean: {', '.join(close)}?" if close else f" Known skills: {', '.join(known) or 'none'}."
        return f"There is no skill named {name!r}.{hint}"
    body = (skill.help_text or "").strip() or skill.description
    caps = ", ".join(skill.capabilities or [])
    return f"{skill.name}\n\n{body}" + (f"\n\nCapabilities: {caps}" if caps else "")


def new_text(session: Session, made: bool) -> str:
    """The answer to /new."""
    if not made:
        return f"This is already a new conversation (#{session.number}): write away."
    return (
        f"Started a new conversation (#{session.number}); I won't see the earlier messages in it. "
        "The earlier one is kept: /sessions lists them, /resume N continues one."
    )


def _when(stamp: str | None) -> str:
    return stamp[:16].replace("T", " ") if stamp else "?"


def sessions_text(active: int, sessions: list[Session], shown: int = 10) -> str:
    """The answer to /sessions: this chat's (or topic's) recent conversations, newest first."""
    if not sessions:
        return "No conversations here yet."
    lines = ["Conversations here (newest first):"]
    for session in sorted(sessions, key=lambda s: s.number, reverse=True)[:shown]:
        mark = " ← now" if session.number == active else ""
        if session.started is None:
            about = "no messages yet" if session.number != 1 else "from before sessions were listed"
            lines.append(f"#{session.number} — {about}{mark}")
            continue
        first = f": “{escape_markdown(session.first)}”" if session.first else ""
        lines.append(
            f"#{session.number} — started {_when(session.started)}, last {_when(session.last)}, "
            f"{session.messages} msgs{first}{mark}"
        )
    if len(sessions) > shown:
        lines.append(f"({len(sessions) - shown} older not shown)")
    lines += ["", "/resume N continues one; /new starts another."]
    return "\n".join(lines)


def resume_text(session: Session | None, asked: str) -> str:
    """The answer to /resume (``session`` None: there is no such conversation here)."""
    if session is None:
        return f"There is no conversation #{escape_markdown(asked)} here; /sessions lists them."
    first = f" (“{escape_markdown(session.first)}”)" if session.first else ""
    return f"Continuing conversation #{session.number}{first}."


def resume_number(args: str) -> int | None:
    """The N of ``/resume N`` (``#3`` and ``3`` alike); None when it is not a positive whole number."""
    text = args.strip().lstrip("#")
    return int(text) if text.isdigit() and 0 < len(text) <= 6 and int(text) > 0 else None


RESUME_USAGE = "Usage: /resume N, with N from /sessions."


def resume_command(runtime: Runtime, conversation_id: str, args: str) -> str:
    """/resume N for ``conversation_id`` (the chat or topic)."""
    number = resume_number(args)
    if number is None:
        return RESUME_USAGE
    return resume_text(runtime.agent.resume(conversation_id, number), str(number))


def collector_notice(collector_name: str, text: str) -> str:
    """The push message for a collector's matched items (Markdown, the items' text escaped)."""
    return f"📬 {escape_markdown(collector_name)}: {escape_markdown(text)}"


def summary_line(written: str) -> str:
    """/why's line for a prompt that had a summary of earlier messages (agent/compaction.py)."""
    when = f" (written {written[:16].replace('T', ' ')})" if written else ""
    return (
        f"My last reply also saw a summary of earlier messages of this conversation{when}, in place of the "
        "messages that no longer fit its history."
    )


def why_text(recalled: Sequence[Mapping[str, object]], summary: str | None = None) -> str:
    """The memories placed in the prompt of the last reply, with where they came from; ``summary``: when the
    summary of earlier messages in that prompt was written (None: it had none)."""
    note = [summary_line(summary)] if summary is not None else []
    if not recalled:
        return "\n\n".join(["No memories were recalled for my last reply.", *note])
    lines = ["Recalled for my last reply:"]
    for hit in recalled:
        where = hit.get("ref") or hit.get("path") or hit.get("source") or "?"
        score = hit.get("score")
        text = " ".join(str(hit.get("text") or hit.get("snippet") or "").split())
        line = f"- {escape_markdown(str(where))}"
        if isinstance(score, (int, float)):
            line += f" ({score:.2f})"
        if text:
            line += f": {escape_markdown(text[:160])}"  # recalled text may be a mail's: shown as typed
        lines.append(line)
    return "\n\n".join(["\n".join(lines), *note])


def run_command(runtime: Runtime, conversation_id: str, text: str, *, owner_data: bool = True) -> str | None:
    """The reply to a ``/command`` line, or None when ``text`` is not a known command.

    ``owner_data``: the turn is the owner's own one-to-one chat (``assistant_framework.access.sees_owner_data``);
    otherwise owner-only commands are refused and /status shows no details."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    name = name.split("@", 1)[0].lower()
    if name in OWNER_ONLY_COMMANDS and not command_allowed(name, owner_data):
        log.info("commands: /%s refused in %s (owner only)", name, conversation_id)
        return owner_only_text(name)
    if name == "status" and not owner_data:
        return GUEST_STATUS
    command = _COMMANDS.get(name)
    return command(Invocation(runtime, conversation_id, rest, owner_data)) if command is not None else None


@dataclass(frozen=True)
class Invocation:
    """One command line as its handler sees it: the runtime, the chat's conversation, the words after the
    command's name, and whether the chat sees the owner's data."""

    runtime: Runtime
    conversation_id: str
    rest: str
    owner_data: bool


def _help(call: Invocation) -> str:
    offered = call.runtime.agent.offered_skills(call.owner_data)  # what this chat's turns are offered, no more
    return help_text(offered, owner_data=call.owner_data)


def _skills(call: Invocation) -> str:
    offered = call.runtime.agent.offered_skills(call.owner_data)
    return skills_text(call.runtime.skills, offered, owner_data=call.owner_data)


def _skill(call: Invocation) -> str:
    return skill_text(call.runtime.skills, call.rest, call.runtime.agent.offered_skills(call.owner_data))


def _voice(call: Invocation) -> str:
    from messaging_llm_bot.conversation.chatflags import ChatFlags
    from messaging_llm_bot.conversation.voice import voice_command

    runtime = call.runtime
    return voice_command(ChatFlags(runtime.workspace), runtime.settings.voice, call.conversation_id, call.rest)


def stop_turn(runtime: Runtime, conversation_id: str, decline: Callable[[], object] = lambda: None) -> str:
    """/stop: the conversation's running turn ends and ``decline`` answers no to the open question it waits for
    (a confirmation counts as declined); the reply."""
    if not runtime.agent.stop(conversation_id):
        return NOTHING_TO_STOP_TEXT
    decline()
    return STOPPING_TEXT


def _stop(call: Invocation) -> str:
    return stop_turn(call.runtime, call.conversation_id)


def _why(call: Invocation) -> str:
    agent = call.runtime.agent
    return why_text(agent.last_recall(call.conversation_id), agent.last_summary(call.conversation_id))


def _model(call: Invocation) -> str:
    from messaging_llm_bot.conversation.model_choice import model_command

    return model_command(call.runtime, call.conversation_id, call.rest)


def _busy(call: Invocation) -> str:
    from messaging_llm_bot.conversation.busy import busy_command
    from messaging_llm_bot.conversation.chatflags import ChatFlags

    return busy_command(call.runtime, ChatFlags(call.runtime.workspace), call.conversation_id, call.rest)


def _pair(call: Invocation) -> str:
    from messaging_llm_bot.conversation.pairing import pair_command

    return pair_command(call.runtime, call.rest)


def _drafts(call: Invocation) -> str:
    from messaging_llm_bot.conversation.skill_drafts import drafts_command

    return drafts_command(call.runtime.workspace, call.rest)


def _jobs(call: Invocation) -> str:
    """/jobs lists the jobs; /jobs add ... adds one."""
    runtime = call.runtime
    zone = runtime.agent.settings.runtime.timezone
    if call.rest.strip().split(" ", 1)[0].lower() == "add":
        from messaging_llm_bot.conversation.job_add import chat_add

        line = call.rest.strip()[len("add") :]
        return chat_add(runtime.workspace, call.conversation_id, line, runtime.agent.now(), zone, runtime.settings.jobs)
    from messaging_llm_bot.conversation.job_texts import jobs_text

    return jobs_text(runtime.workspace, runtime.agent.now(), zone, runtime.settings.jobs)


def _now(call: Invocation) -> str | None:
    """/now: the digest, where its module is installed (else not a command here)."""
    if not has_digest():
        return None
    from messaging_llm_bot.conversation.digest import build_digest

    runtime = call.runtime
    return build_digest(runtime.workspace, runtime.agent.now(), runtime.agent.settings.runtime.timezone)


#: Each command's handler by its name (the owner-only and guest checks are run_command's, before these).
_COMMANDS: dict[str, Callable[[Invocation], str | None]] = {
    "help": _help,
    "start": _help,
    "skills": _skills,
    "skill": _skill,
    "reset": lambda call: call.runtime.agent.reset(call.conversation_id),
    "new": lambda call: new_text(*call.runtime.agent.new_session(call.conversation_id)),
    "sessions": lambda call: sessions_text(*call.runtime.agent.session_list(call.conversation_id)),
    "resume": lambda call: resume_command(call.runtime, call.conversation_id, call.rest),
    "voice": _voice,
    "stop": _stop,
    "status": lambda call: call.runtime.status_text(),
    "why": _why,
    "stats": lambda call: runtime_stats(call.runtime, call.conversation_id),
    "model": _model,
    "busy": _busy,
    "pair": _pair,
    "drafts": _drafts,
    "reload": lambda call: reload_text(call.runtime.reload()),
    "jobs": _jobs,
    "now": _now,
}


def reset_choice(runtime: Runtime, conversation_id: str, clear: bool) -> str:
    """The answer to /reset's question (Telegram's buttons): the conversation's history cleared, or kept."""
    return runtime.agent.reset(conversation_id) if clear else "Kept the history."


#: What a chat without buttons sends after /reset to confirm it (``command_reply``).
RESET_CONFIRM = "yes"


def command_reply(runtime: Runtime, conversation_id: str, text: str, *, owner_data: bool) -> str:
    """A command's answer in a chat without buttons (Signal, Matrix, WhatsApp; blocking: run it in a thread):
    /reset asks first and clears the history only as ``/reset yes``, the rest as ``run_command`` does, an
    unknown command named. ``owner_data``: the owner's own one-to-one chat (the owner-only commands)."""
    text = text.strip()
    name, _, rest = text[1:].partition(" ")
    if name.lower() == "reset":
        if rest.strip().lower() == RESET_CONFIRM:
            return runtime.agent.reset(conversation_id)
        return f"{RESET_QUESTION}\n\nSend /reset {RESET_CONFIRM} to clear it."
    answered = run_command(runtime, conversation_id, text, owner_data=owner_data)
    return answered if answered is not None else unknown_command_text(f"/{name}")


def command_word(text: str) -> str:
    """The command a typed ``/command`` line names, in lower case (``"/Stop now"`` -> ``"stop"``); "" for none."""
    words = text.strip()[1:].split(maxsplit=1)
    return words[0].lower() if words and text.strip().startswith("/") else ""


def unknown_command_text(command: str) -> str:
    """The answer to a command no one knows (``/nope``), the same on every channel."""
    return f"Unknown command {command}. /help lists what I understand."
