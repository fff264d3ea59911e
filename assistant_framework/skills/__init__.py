"""Skills: plugins in ``skills/<name>/`` the model calls through the JSON protocol.

- ``manager``: ``SkillManager`` loads them once and runs them safely (schema check, timeout, truncation).
- ``prepare``: one call made ready to run (``PreparedCall``): arguments coerced, type-fitted, validated once.
- ``spec``: the plugin contract (module constants, ``run(workspace, args, context)``, ``SkillContext``).
- ``loader``: one plugin folder into a ``Skill`` record, checked against ``spec``.
- ``source``: the seam for skills that are not plugin folders (``SkillSource``: an MCP server's tools).
- ``grammar``: the grammar-safe subset of JSON Schema (what a local server turns into a grammar).
- ``support``: small helpers for skill authors (``need``, ``context_now``, ``context_zone``),
  ``OUTSIDE_LABEL``, which marks outside text in a result, and ``OwnWordsError``, an error that
  carries no outside text.

The names below are the contract for plugin authors and the host; import them from here.
"""

from assistant_framework.skills.manager import BUILTIN_SKILLS_DIR, SkillManager, SkillResult
from assistant_framework.skills.prepare import PreparedCall
from assistant_framework.skills.source import SkillLoadError, SkillSource, SourceLoad
from assistant_framework.skills.spec import SkillArgs, SkillContext, SkillRun, SkillServices
from assistant_framework.skills.support import OUTSIDE_LABEL, OwnWordsError, context_now, context_zone, need

__all__ = [
    "BUILTIN_SKILLS_DIR",
    "OUTSIDE_LABEL",
    "OwnWordsError",
    "PreparedCall",
    "SkillArgs",
    "SkillContext",
    "SkillLoadError",
    "SkillManager",
    "SkillResult",
    "SkillRun",
    "SkillServices",
    "SkillSource",
    "SourceLoad",
    "context_now",
    "context_zone",
    "need",
]
