"""Long-term memory: L0 turn log, FTS5 index and search, recall, facts, episodes, profile.

See docs/memory.md. The bot uses ``MemoryService``; ``check_memory_claim`` guards replies.
"""

from .claims import check_memory_claim
from .search import MemoryHit
from .service import MemoryService, memory_enabled

__all__ = ["MemoryHit", "MemoryService", "check_memory_claim", "memory_enabled"]
