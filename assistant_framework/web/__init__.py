"""The owner's web page: memory, conversations, jobs, drafts, traces, collectors, usage, skills and served
clients (Tornado, no script).

``assistant web`` serves it alone; with ``web.enabled`` the bot serves it in its own process.
"""

from .parts import StandaloneParts, standalone_parts
from .server import DEFAULT_PORT, WebServer, make_app, start_if_enabled

__all__ = ["DEFAULT_PORT", "StandaloneParts", "WebServer", "make_app", "standalone_parts", "start_if_enabled"]
