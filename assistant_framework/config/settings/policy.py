"""The ``policy`` section: what a skill call may do without asking, and what guests are offered."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import flag, frozen, mapping_of, one_of, reads, strings

CAPABILITIES = ("read", "write", "delete", "network", "send", "exec")
DECISIONS = ("allow", "ask", "deny")
#: What each capability gets when ``policy.capabilities`` does not name it.
DEFAULT_DECISIONS: Mapping[str, str] = frozen(
    # exec: a program runs (a SKILL.md skill's script): the owner is asked unless policy.skills.<skill> says.
    {"read": "allow", "write": "allow", "delete": "ask", "network": "ask", "send": "ask", "exec": "ask"}
)
#: Per-skill rules when ``policy.skills`` does not name the skill. ``send_file`` sends a workspace file to the
#: chat the turn answers: unasked in a trusted turn, and like every ``send`` asked in one with outside content.
DEFAULT_SKILL_DECISIONS: Mapping[str, str] = frozen({"send_file": "allow"})
#: Skills a guest turn may call unless ``policy.guest_skills`` says otherwise. They run on the chat's own
#: area (assistant_framework/access.py), so even ``file`` cannot reach the owner's files.
DEFAULT_GUEST_SKILLS = ("conversation_search", "file", "memory_search", "time", "web")


@dataclass(frozen=True)
class PolicySettings:
    """The ``policy`` section."""

    #: A capability the config names replaces its default; the others keep theirs.
    capabilities: Mapping[str, str] = field(
        default_factory=lambda: DEFAULT_DECISIONS,
        metadata=reads(
            mapping_of(one_of(*DECISIONS), over=DEFAULT_DECISIONS),
            schema={"propertyNames": {"enum": list(CAPABILITIES)}},
        ),
    )
    #: A skill the config names replaces its default; the others keep theirs.
    skills: Mapping[str, str] = field(
        default_factory=lambda: DEFAULT_SKILL_DECISIONS,
        metadata=reads(mapping_of(one_of(*DECISIONS), over=DEFAULT_SKILL_DECISIONS)),
    )
    allow_private_network: bool = field(default=False, metadata=reads(flag))
    guest_skills: tuple[str, ...] = field(
        default=DEFAULT_GUEST_SKILLS, metadata=reads(strings, schema={"uniqueItems": True})
    )
