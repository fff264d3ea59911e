"""The gate every skill call passes: capability policy, owner confirmation, audit log.

The decision comes from ``assistant_framework.policy``; this module applies it to one
call in a turn: narrows the capabilities to what the call does, asks the owner through
the frontend's ``approve`` callback when the policy says ``ask`` (no callback means no),
and appends every call with its decision and outcome to ``state/audit.jsonl``.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from assistant_framework.access import feeds_prompt, schedules_work
from assistant_framework.config.settings import PolicySettings
from assistant_framework.json_types import JsonObject
from assistant_framework.policy import (
    GUARDED_WHEN_UNTRUSTED,
    UNTRUSTED_WHY,
    Decision,
    append_audit,
    audit_record,
    decide,
)
from assistant_framework.skills import OUTSIDE_LABEL, SkillArgs
from assistant_framework.skills.loader import Skill
from assistant_framework.skills.once import OnceCall
from assistant_framework.stores.provenance import UNTRUSTED_RECORD
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.honesty import READ_ACTIONS
from messaging_llm_bot.agent.outside import Allowances

log = logging.getLogger(__name__)

#: ``action`` values that remove data (the read-only ones are shared with the honesty check).
DELETE_ACTIONS = frozenset(
    {"delete", "forget", "cancel", "remove", "purge", "erase", "wipe", "drop", "destroy", "discard", "prune", "unset"}
)
#: Where content from outside (collectors, attachments) lives in the workspace, and the label a skill
#: puts before outside text in its result (the memory skills label outside hits with it).
UNTRUSTED_MARKERS = ("collectors/", "inbox/", "collector:", OUTSIDE_LABEL)

#: ``action`` values that replace existing data (a ``file`` write counts only when the file exists).
OVERWRITE_ACTIONS = frozenset(
    {"write", "update", "set", "replace", "edit", "rename", "move", "clear", "overwrite", "reset", "empty", "truncate"}
)
#: ``action`` values that add or change data and remove none: a call with one needs no ``delete``.
KEEPING_ACTIONS = frozenset(
    {
        "add", "append", "create", "new", "insert", "put", "store", "save", "record", "log", "note", "remember",
        "write", "set", "update", "edit", "replace", "overwrite", "rename", "move", "mark", "tag", "import",
        "complete", "done", "finish", "close", "archive", "reopen", "undo", "merge", "pause", "resume", "run_now",
    }
)  # fmt: skip
#: ``action`` values that change an existing record in place (a task marked done leaves the open list).
CHANGE_ACTIONS = frozenset({"complete", "done", "finish", "close", "archive", "reopen", "undo", "merge"})
#: Skills whose every change lands in a file of the system prompt.
PROMPT_SKILLS = frozenset({"learnings"})
#: Skills whose changes schedule work that runs later in the owner's name (a job's prompt is a turn with
#: every skill, a reminder a message in the owner's chat): text the assistant read must not plant one. Any
#: other skill's write into their files (``access.SCHEDULE_FOLDERS``) is judged by its path.
SCHEDULING_SKILLS = frozenset({"jobs", "reminders"})
_PATH_KEYS = ("path", "paths", "file", "folder")

#: The owner's third answer, "allow for this conversation" (``approve`` returns it instead of True); a
#: frontend offers it when the question says ``allow_conversation``.
ALLOW_CONVERSATION = "conversation"
#: The owner's own no (a button, a typed "no", the page's Decline): falsy as every no, and told apart from the no
#: of a question no one answered, the bot's stop or /stop (False): only the owner's is kept (``OnceCall.decline``).
OWNER_NO = ""
#: The chat a call is made in, as the skills' context names it (None: no chat, a job run or a served client).
ChatId = int | str | None


class ApprovalRequest(TypedDict):
    """The question about one call, as the guard hands it to a channel's ``approve`` (and a channel, such as
    the web chat, may send it on as JSON)."""

    skill: str
    args: object  # the call's arguments as shown (``shown_args``: a copy, every value whole)
    capabilities: list[str]
    reason: str  # why the policy asks
    chat: ChatId
    allow_conversation: bool  # the owner may answer "allow for this conversation"
    goes_to: NotRequired[str]  # who the call reaches where its arguments do not say (a mail's reply; Skill.goes_to)


#: Asks the owner about one call: True (confirm), False (decline) or ``ALLOW_CONVERSATION``.
ApproveCallback = Callable[[ApprovalRequest], "bool | str"]


def _arg_paths(args: object) -> list[str]:
    if not isinstance(args, dict):
        return []
    found: list[str] = []
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found += [v for v in value if isinstance(v, str)]
    return found


def _action(args: object) -> str:
    """The call's ``action`` as the gate compares it (trimmed, lower case), or ""."""
    action = args.get("action") if isinstance(args, dict) else None
    return action.strip().lower() if isinstance(action, str) else ""


def _path_forms(workspace: Workspace, paths: list[str]) -> list[str]:
    """Each path as written and as the workspace resolves it (``notes/../context/x.md`` is
    ``context/x.md``; a link is followed), so a roundabout spelling is judged by where it lands."""
    forms = list(paths)
    for rel in paths:
        try:
            forms.append(workspace.relative(workspace.path(rel)))
        except (ValueError, OSError):
            continue  # a path the workspace refuses fails in the skill itself
    return forms


def untrusted_write(skill: Skill, args: SkillArgs, caps: list[str], workspace: Workspace, *, guest: bool) -> str | None:
    """Why a call must be confirmed after outside content entered the turn, or None.

    It writes a file that feeds every later system prompt (context/, learnings/, the profile), or it
    removes, replaces or changes existing data (a ``file`` write over an existing file, empty content
    included; an update, a set, a cancel, a task completed), whatever capabilities the skill declares.
    """
    if not {"write", "delete"}.intersection(caps):
        return None
    action = _action(args)
    paths = _arg_paths(args)
    if skill.name in SCHEDULING_SKILLS and action not in READ_ACTIONS:
        return "schedules work that runs later in the owner's name (a job or a reminder)"
    if action not in READ_ACTIONS and any(schedules_work(p) for p in _path_forms(workspace, paths)):
        return "schedules work that runs later in the owner's name: it changes a file of jobs/ or reminders/"
    if not guest and (skill.name in PROMPT_SKILLS or any(feeds_prompt(p) for p in _path_forms(workspace, paths))):
        return "writes a file that feeds every system prompt (context/, learnings/, profile)"
    if action in DELETE_ACTIONS:
        return f"removes existing data ({action})"
    if action in CHANGE_ACTIONS:
        return f"changes existing data ({action})"
    if action in OVERWRITE_ACTIONS:
        if skill.name != "file":
            return f"changes existing data ({action})"
        for rel in paths:
            try:
                if workspace.path(rel).is_file():
                    return f"overwrites the existing file {rel}"
            except (ValueError, OSError):
                continue  # a path the workspace refuses fails in the skill itself
    return None


#: The most a question shows of the arguments, each shown whole (a question too long for one message goes in
#: parts: conversation/approvals.py). A call whose arguments are longer is refused unasked, so the owner never
#: confirms what they did not see: a mail of 7,000 characters is asked about, a note of 40,000 is not.
QUESTION_ARGS_CHARS = 8000


def too_long_to_ask(reason: str, size: int) -> str:
    """What the model reads of a call whose arguments the question cannot show whole (not asked, not done)."""
    return (
        f"This call needs the owner's confirmation ({reason}), but its arguments are too long to show the owner "
        f"whole ({size} characters, at most {QUESTION_ARGS_CHARS}); it was not done. Shorten them (a shorter "
        "text, fewer recipients) or tell the user."
    )


def shown_args(args: object) -> object:
    """The arguments as the owner is asked about them: a copy (nothing the question path does can change the
    call that runs), every value whole, the short fields first (the action and the path before a long content)."""
    if not isinstance(args, dict):
        return copy.deepcopy(args)

    def size(item: tuple[str, object]) -> int:
        return len(json.dumps(item[1], ensure_ascii=False, default=str))

    shown: JsonObject = {}
    for key, value in sorted(args.items(), key=lambda item: (item[0] != "action", size(item))):
        shown[key] = copy.deepcopy(value)
    return shown


@dataclass
class GateResult:
    """Whether the call may run; when not, the sentence the model receives instead of a result."""

    allowed: bool
    decision: Decision
    refusal: str | None = None
    #: Runs under the owner's "allow for this conversation": what it reads is covered by it too.
    conversation_allowed: bool = False
    #: Refused by the owner's own no (``OWNER_NO``), not by a question no one answered or a stop.
    owner_no: bool = False


#: The capability of a call that runs a program (a SKILL.md skill's script): never in a guest chat.
EXEC = "exec"


def rule_name(skill: Skill, args: SkillArgs) -> str:
    """The name ``policy.skills`` is read under for this call: the skill's, or the one it names for its
    calls (``run_script`` runs a script of the skill in its arguments: that skill's rule decides)."""
    return skill.policy_name(args) if skill.policy_name is not None else skill.name


def capabilities_for(skill: Skill, args: SkillArgs) -> list[str]:
    """The capabilities this call needs, narrowed by its ``action``: a read of the workspace needs only
    ``read``, a delete only ``delete``, an add or change no ``delete``. What a call does beyond the
    workspace (``network``, ``send``) is never narrowed away, and an action the gate does not know
    needs everything the skill declares. A skill that says what an action needs (``ACTION_CAPABILITIES``:
    the mail skill's ``draft`` is a ``write``) is taken at its word for that action."""
    declared = list(skill.capabilities or ["read"])
    action = _action(args)
    if not action:
        return declared
    per_action = skill.action_capabilities or {}
    if action in per_action:
        return list(per_action[action])
    reach = [c for c in declared if c in ("network", "send", "exec")]
    if action in READ_ACTIONS:
        return ["read", *reach]
    if action in DELETE_ACTIONS and "delete" in declared:
        return ["delete", *reach]
    if action in DELETE_ACTIONS or action in KEEPING_ACTIONS:
        return [c for c in declared if c != "delete"] or declared
    return declared


def _as_text(value: object) -> str:
    """A string as it is (so a record shown as JSON text keeps its quotes), anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def touches_untrusted(
    args: object, value: object, capabilities: Collection[str] = (), outside: bool | None = None
) -> bool:
    """True when a call read content that came from outside (a mail, a feed item, an attachment, the web):
    a skill whose results are outside content (``Skill.outside``; unset: any ``network`` skill), a path or
    source of outside content, the ``OUTSIDE_LABEL`` a skill puts on outside text, or a JSON record marked
    ``"untrusted": true`` in its args or result. The result is already cut to the skill result limit, so
    all of what the model sees is checked."""
    if outside or (outside is None and "network" in (capabilities or ())):
        return True
    text = _as_text(args) + "\n" + _as_text(value)
    return any(marker in text for marker in UNTRUSTED_MARKERS) or UNTRUSTED_RECORD.search(text) is not None


class CallGate:
    """Applies the ``policy`` config to skill calls and writes the audit log."""

    def __init__(self, workspace: Workspace, policy: PolicySettings) -> None:
        self.workspace = workspace
        self.policy = policy
        self.allowances = Allowances()

    def check(
        self,
        skill: Skill,
        args: SkillArgs,
        *,
        untrusted: bool,
        approve: ApproveCallback | None,
        chat: ChatId,
        workspace: Workspace | None = None,
        guest: bool = False,
        untrusted_why: str = UNTRUSTED_WHY,
        conversation: str | None = None,
        outside: tuple[str, ...] = (),
        done_before: Callable[[], bool] | None = None,
        goes_to: Callable[[], str | None] | None = None,
        once: Callable[[], OnceCall | None] | None = None,
    ) -> GateResult:
        """Decide, asking the owner when needed; a refused call is audited here.

        ``workspace``: where the call runs (a guest chat's folder), to tell an overwrite from a new file.
        ``conversation`` and ``outside`` (the keys of the outside content in view, agent/outside.py): a
        call that asks only because outside content is in view and only for ``network`` may be allowed
        by the owner for this conversation; it then runs unasked while that content is all there is.
        ``done_before``: True when the call matches what the turn's message already did (a replay after a crash,
        ``Skill.done_before``): it will do nothing again, so no one is asked. ``once``: the call as its skill's
        ledger matches it (``Skill.once_call``), where the owner's no is kept: a call they declined for the turn's
        message is refused unasked (the turn run again after a kill)."""
        caps = capabilities_for(skill, args)
        if guest and EXEC in caps:
            # A guest never runs a program on the owner's machine, whatever the policy or guest_skills say.
            decision = Decision("deny", f"capability {EXEC!r} is never allowed in a guest chat")
            self.audit(chat, skill.name, args, "deny", "denied")
            return GateResult(False, decision, f"This chat may not run programs ({decision.reason}). Tell the user.")
        decision = self._decide(skill, args, caps, untrusted, untrusted_why, workspace, guest)
        offer = (
            conversation is not None
            and bool(outside)
            and decision.action == "ask"
            and GUARDED_WHEN_UNTRUSTED.intersection(caps) == {"network"}
            and self._allowed_but_for_outside(skill, caps, args, workspace, guest)
        )
        if offer and self.allowances.covers(str(conversation), skill.name, outside):
            allowed = Decision("allow", f"{decision.reason}; the owner allowed it for this conversation")
            return GateResult(True, allowed, conversation_allowed=True)
        if decision.action == "allow":
            return GateResult(True, decision)
        if decision.action == "deny":
            self.audit(chat, skill.name, args, decision.action, "denied")
            return GateResult(
                False,
                decision,
                f"The owner's policy does not allow this call ({decision.reason}). Tell the user it was not done.",
            )
        if done_before is not None and done_before():
            return GateResult(True, Decision("allow", f"{decision.reason}; done before for this message, not again"))
        ask = functools.partial(
            self._ask_owner, skill, args, caps, decision, chat, approve, offer, conversation, outside, goes_to
        )
        return self._ask_unless_declined(once, skill.name, args, chat, decision, ask)

    def _ask_unless_declined(
        self,
        once: Callable[[], OnceCall | None] | None,
        name: str,
        args: SkillArgs,
        chat: ChatId,
        decision: Decision,
        ask: Callable[[], GateResult],
    ) -> GateResult:
        """``ask()`` the owner, unless they declined this call for the turn's message before (``once``): then it
        is refused unasked; their no now is kept there."""
        matched = once() if once is not None else None
        declined = matched.declined_before() if matched is not None else None
        if declined is not None:
            self.audit(chat, name, args, "ask", "declined_before")
            return GateResult(False, decision, declined)
        gate = ask()
        if gate.owner_no and matched is not None:
            matched.decline()
        return gate

    def _decide(
        self,
        skill: Skill,
        args: SkillArgs,
        caps: list[str],
        untrusted: bool,
        untrusted_why: str,
        workspace: Workspace | None,
        guest: bool,
    ) -> Decision:
        """The policy's decision, and an allowed write asked about when outside content is in view."""
        decision = decide(
            rule_name(skill, args),
            skill.capabilities or ["read"],
            self.policy,
            untrusted=untrusted,
            action_capabilities=caps,
            untrusted_why=untrusted_why,
        )
        if untrusted and decision.action == "allow":
            why = untrusted_write(skill, args, caps, workspace or self.workspace, guest=guest)
            if why:
                decision = Decision("ask", f"{untrusted_why} and the call {why}")
        return decision

    def _ask_owner(
        self,
        skill: Skill,
        args: SkillArgs,
        caps: list[str],
        decision: Decision,
        chat: ChatId,
        approve: ApproveCallback | None,
        offer: bool,
        conversation: str | None,
        outside: tuple[str, ...],
        goes_to: Callable[[], str | None] | None = None,
    ) -> GateResult:
        """A call the policy asks about: the owner's answer (once, or for this conversation when ``offer``);
        no way to ask, an error asking or a no refuses it, audited."""
        shown = shown_args(args)
        who = goes_to() if goes_to is not None and approve is not None else None
        size = len(json.dumps(shown, ensure_ascii=False, default=str)) + len(who or "")
        if approve is not None and size > QUESTION_ARGS_CHARS:
            self.audit(chat, skill.name, args, "ask", "too_long_to_ask")
            return GateResult(False, decision, too_long_to_ask(decision.reason, size))
        request: ApprovalRequest = {
            "skill": skill.name,
            "args": shown,
            "capabilities": caps,
            "reason": decision.reason,
            "chat": chat,
            "allow_conversation": offer,
        }
        if who:
            request["goes_to"] = who
        answer: bool | str = False
        if approve is not None:
            try:
                answer = approve(request)
            except Exception:  # a broken confirmation path must fail closed
                log.exception("asking the owner to confirm %s failed", skill.name)
        if offer and answer == ALLOW_CONVERSATION:
            self.allowances.grant(str(conversation), skill.name, outside)
            granted = Decision("ask", decision.reason + "; the owner allowed it for this conversation")
            return GateResult(True, granted, conversation_allowed=True)
        if answer:
            return GateResult(True, Decision("ask", decision.reason + "; the owner confirmed"))
        outcome = "declined" if approve is not None else "no_confirmation"
        self.audit(chat, skill.name, args, "ask", outcome)
        if approve is None:
            refusal = (
                f"This call needs the owner's confirmation ({decision.reason}), which this chat cannot give. "
                "Tell the user what you wanted to do; it was not done."
            )
        else:
            refusal = (
                f"The owner did not confirm this call ({decision.reason}); it was not done. "
                "Do not retry it unless the user asks again."
            )
        return GateResult(False, decision, refusal, owner_no=answer == OWNER_NO and approve is not None)

    def _allowed_but_for_outside(
        self, skill: Skill, caps: list[str], args: SkillArgs, workspace: Workspace | None, guest: bool
    ) -> bool:
        """True when the policy alone would run the call (it asks only because outside content is in view)."""
        plain = decide(
            rule_name(skill, args),
            skill.capabilities or ["read"],
            self.policy,
            action_capabilities=caps,
        )
        return (
            plain.action == "allow"
            and untrusted_write(skill, args, caps, workspace or self.workspace, guest=guest) is None
        )

    def audit(
        self, chat: ChatId, skill: str, args: SkillArgs, decision: str, outcome: str, error: str | None = None
    ) -> None:
        """Append one audit line; a failed audit write is logged, never fatal."""
        try:
            append_audit(
                self.workspace,
                audit_record(chat=chat, skill=skill, args=args, decision=decision, outcome=outcome, error=error),
            )
        except Exception:
            log.exception("could not append to the audit log")
