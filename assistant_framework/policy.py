"""Capability policy for skill calls, and the audit log of every call.

Each skill declares capabilities (read, write, delete, network, send, exec). The
``policy`` config maps a capability, or a skill by name, to allow, ask or
deny. In a turn that involved untrusted content (a mail, a feed item, an
attachment, a fetched page), every delete, network, send or exec call needs the
owner's confirmation whatever the policy says, so text the assistant read
cannot steer it into destroying or sending the owner's data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NotRequired, TypedDict

from assistant_framework.config import REDACTED, SECRET_KEY
from assistant_framework.config.settings import PolicySettings
from assistant_framework.workspace.tail import LogCap

if TYPE_CHECKING:
    from assistant_framework.workspace import Workspace

#: Capabilities that always need confirmation after untrusted content entered the turn.
GUARDED_WHEN_UNTRUSTED = frozenset({"delete", "network", "send", "exec"})
_ORDER = {"allow": 0, "ask": 1, "deny": 2}
AUDIT_LOG = "state/audit.jsonl"
#: Read by nothing, it grew 3 MB a year at a skill call a turn: past 4 MiB it is cut to its newest 2 MiB (months).
AUDIT_CAP = LogCap(max_bytes=4 * 1024 * 1024, keep_lines=20_000)


@dataclass(frozen=True)
class Decision:
    """What to do with one skill call, and why (shown to the owner when asked)."""

    action: str  # "allow" | "ask" | "deny"
    reason: str


#: Why an untrusted turn asks (``decide``'s ``untrusted_why``): the owner reads it in the question.
UNTRUSTED_WHY = "this turn involved untrusted content"


def decide(
    skill: str,
    capabilities: Iterable[str],
    policy: PolicySettings | None = None,
    *,
    untrusted: bool = False,
    action_capabilities: Iterable[str] | None = None,
    untrusted_why: str = UNTRUSTED_WHY,
) -> Decision:
    """The decision for a call: a per-skill rule wins, else the strictest capability rule.

    ``policy``: the ``policy`` record (absent: the defaults).
    ``action_capabilities`` narrows the declared capabilities to what this call
    does (e.g. a ``file`` read needs only ``read`` even though the skill can delete).
    """
    settings = policy if policy is not None else PolicySettings()
    caps = list(action_capabilities if action_capabilities is not None else capabilities) or ["read"]
    per_skill = settings.skills.get(skill)
    rules = settings.capabilities  # the configured capabilities over their defaults
    if per_skill:
        decision = Decision(per_skill, f"policy for skill {skill!r} is {per_skill}")
    else:
        strictest = max(caps, key=lambda cap: _ORDER.get(rules.get(cap, "ask"), 1))
        action = rules.get(strictest, "ask")
        decision = Decision(action, f"capability {strictest!r} is set to {action}")
    if decision.action == "allow" and untrusted:
        guarded = sorted(GUARDED_WHEN_UNTRUSTED.intersection(caps))
        if guarded:
            return Decision("ask", f"{untrusted_why} and the call needs {', '.join(guarded)}")
    return decision


def redact_args(value: object, key: str = "") -> object:
    """A copy of skill args with secret-looking fields replaced, for the audit log.

    Whatever sits under a secret-looking key is replaced whole: a scalar, a list (``passwords: [...]``)
    or an object (``token: {"value": ...}``); secret-looking keys deeper down (an object in a list) too.
    Only an empty value (None, "", [], {}) is kept, so the log still says nothing was given."""
    if key and SECRET_KEY.search(str(key)) and value not in (None, "", [], {}):
        return REDACTED
    if isinstance(value, dict):
        return {k: redact_args(v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_args(v) for v in value]
    if isinstance(value, str) and len(value) > 500:
        return value[:500] + f"[... {len(value) - 500} more characters]"
    return value


class AuditRecord(TypedDict):
    """One line of ``state/audit.jsonl``."""

    time: str
    #: The chat the call was made in (None: none, a job run or a served client; ``web`` for the page).
    chat: int | str | None
    skill: str
    #: The call's arguments, secret-looking fields replaced and long texts cut (``redact_args``).
    args: object
    decision: str
    outcome: str
    error: NotRequired[str]


def audit_record(
    *,
    chat: int | str | None,
    skill: str,
    args: object,
    decision: str,
    outcome: str,
    error: str | None = None,
    time: datetime | None = None,
) -> AuditRecord:
    """One audit line: time, chat, skill, redacted args, decision, outcome."""
    record: AuditRecord = {
        "time": (time or datetime.now(UTC)).isoformat(timespec="seconds"),
        "chat": chat,
        "skill": skill,
        "args": redact_args(args),
        "decision": decision,
        "outcome": outcome,
    }
    if error:
        record["error"] = error[:300]
    return record


def append_audit(workspace: Workspace, record: AuditRecord) -> None:
    """Append one record to the workspace audit log (JSONL), cut to its newest lines past ``AUDIT_CAP``."""
    workspace.append_jsonl(AUDIT_LOG, record, AUDIT_CAP)
