"""The mutations bench/mutations.py applies: one-line changes to the security and reliability guards, each
with the test files that should notice it. Data only; tests/test_mutation_list.py checks that every line to
change still occurs exactly once in its file, so a refactor that moves a guard updates this list with it.

One file per area, named for the package whose file the mutation changes (``area_of`` below): a new guard's
mutation goes into its area's file (``channel_<name>.py`` for a channel's folder, and its folder under
ops/channels/: a new file, found here by its name), the test files it names into ``common.py`` or the area file
itself. Areas apart keep two branches that each add a mutation from meeting in one place.
"""

from __future__ import annotations

import importlib
import pkgutil

from mutation_list.common import Mutation

__all__ = ["AREA_FILES", "MUTATIONS", "Mutation", "area_of"]

#: The area files, found in this folder in the order of their names: a new area (``channel_<name>.py`` for a new
#: channel) is a new file, named nowhere else.
AREA_FILES: tuple[str, ...] = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "common"))

MUTATIONS: tuple[Mutation, ...] = tuple(
    mutation for area in AREA_FILES for mutation in importlib.import_module(f"{__name__}.{area}").MUTATIONS
)

#: Which area file holds a mutation of a file of these packages (the first matching prefix).
AREAS: tuple[tuple[str, str], ...] = (
    ("assistant_framework/agentskills", "skills"),
    # The process's one scheduler (conversation/job_*.py) is scheduled work: before the rest of conversation/.
    ("messaging_llm_bot/conversation/job_add", "jobs"),
    ("messaging_llm_bot/conversation/job_router", "jobs"),
    ("messaging_llm_bot/conversation/job_scheduler", "jobs"),
    ("messaging_llm_bot/conversation", "conversation"),
    ("assistant_framework/collectors", "jobs"),
    ("assistant_framework/redaction", "config"),
    ("assistant_framework/workspace", "files"),
    ("assistant_framework/schedules", "jobs"),
    ("assistant_framework/settings", "config"),
    ("assistant_framework/netguard", "access"),
    ("assistant_framework/http_deadline", "access"),
    ("assistant_framework/jsonrpc_http", "access"),  # a bounded HTTP reader, as http_deadline
    ("assistant_framework/tls", "access"),
    ("assistant_framework/spending", "memory"),
    ("messaging_llm_bot/protocol", "protocol"),
    ("messaging_llm_bot/channels", "conversation"),
    ("assistant_framework/skills", "skills"),
    ("assistant_framework/plugin_import", "skills"),
    ("assistant_framework/config", "config"),
    ("assistant_framework/backup", "files"),
    ("assistant_framework/access", "access"),
    ("assistant_framework/policy", "access"),
    ("assistant_framework/memory", "memory"),
    ("assistant_framework/traces", "memory"),
    ("assistant_framework/serve", "serve"),
    ("assistant_framework/media", "media"),
    ("assistant_framework/html_text", "media"),  # the HTML reader of documents, pages and mails
    ("assistant_framework/hooks", "jobs"),
    ("assistant_framework/inbox", "memory"),
    ("assistant_framework/jobs", "jobs"),
    ("messaging_llm_bot/agent", "agent"),
    ("messaging_llm_bot/evals", "agent"),
    ("messaging_llm_bot/serve", "serve"),
    ("assistant_framework/direction", "web"),  # how the web page shows direction characters (paths refuse its set)
    ("assistant_framework/web", "web"),
    ("assistant_framework/mcp", "skills"),
    ("messaging_llm_bot/llm", "agent"),
    ("messaging_llm_bot/cli", "cli_ops"),
    ("messaging_llm_bot/ops", "cli_ops"),
    ("Makefile", "cli_ops"),
    ("skills", "skills"),
    ("collectors", "jobs"),
    ("tests", "cli_ops"),
)


def area_of(path: str) -> str:
    """The area file (without ``.py``) that holds a mutation of ``path``."""
    parts = path.split("/")
    if parts[:2] == ["messaging_llm_bot", "channels"] and len(parts) > 3:
        return f"channel_{parts[2]}"
    if parts[:3] == ["messaging_llm_bot", "ops", "channels"] and len(parts) > 4:
        return f"channel_{parts[3]}"  # a channel's setup, probe and doctor: beside its runtime's mutations
    for prefix, area in AREAS:
        if path == prefix or path.startswith(prefix + "/") or path.startswith(prefix + "."):
            return area
    raise KeyError(f"{path}: no area of the mutation list holds it; add its package to AREAS")
