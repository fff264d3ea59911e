"""How much memory a document reader process may take on this machine, and whether two may run at once.

Two readers of 2 GiB each are 4 GiB of address space on a Raspberry Pi or a VPS of 1 GB: a crafted or merely
large file could bring the OOM killer onto the bot (systemd stops the whole service when any of its processes
is killed so). So the readers together take at most half of the machine's memory, the smaller of ``MemTotal``
and the limit of the cgroup the bot runs in (what ``docker run --memory`` and systemd's ``MemoryMax=`` set), or
``documents.reader_memory_mb`` when the owner sets it. Each reader gets half of that, at most 2 GiB; when half
is below ``READER_MEMORY_FLOOR`` a reader runs alone with the whole of it, and when even that is below the floor
no reader runs: the document is refused in one sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The most one reader may take (a zip bomb in a DOCX or a crafted PDF ends in a MemoryError, not a full machine).
READER_MEMORY_MOST = 2 * 1024**3
#: The least a reader is given: a 26 MB PDF of 60 photo pages needs 109 MiB of address space, the tests' PDFs
#: and office files 22 to 54 MiB (each read under falling bounds until it failed); below this, no reader runs.
READER_MEMORY_FLOOR = 150_000_000
#: The machine's memory the readers may take together; the rest stays for the bot and everything beside it.
READERS_SHARE = 0.5
#: A cgroup limit this large is "no limit" (cgroup v1 writes 2**63 rounded down to a page).
_NO_LIMIT = 2**60


@dataclass(frozen=True)
class ReaderMemory:
    """The bound of one reader process (bytes of address space), whether it must run alone, and the readers'
    memory together it comes from (``budget``, bytes; ``configured``: set by ``documents.reader_memory_mb``)."""

    per_reader: int
    alone: bool
    budget: int
    configured: bool

    @property
    def fits(self) -> bool:
        """False when not even one reader gets ``READER_MEMORY_FLOOR``: no document is read."""
        return self.per_reader >= READER_MEMORY_FLOOR

    @property
    def source(self) -> str:
        """Where ``budget`` comes from, as the log and the doctor say it."""
        return "documents.reader_memory_mb" if self.configured else "half the machine's memory"


def _meminfo_total(proc: Path) -> int | None:
    try:
        for line in (proc / "meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_limit(proc: Path, cgroups: Path) -> int | None:
    """The smallest memory limit of the bot's cgroup and the cgroups above it (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``), None when none is set or none can be read. In a container the cgroup paths
    of ``/proc/self/cgroup`` may name folders it does not see: its own cgroup is then the mount's top."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return None
    found: list[int] = []
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        if controllers == "":
            top, name = cgroups, "memory.max"
        elif "memory" in controllers.split(","):
            top, name = cgroups / "memory", "memory.limit_in_bytes"
        else:
            continue
        parts = [part for part in path.strip().split("/") if part]
        for depth in range(len(parts), -1, -1):
            try:
                value = (top.joinpath(*parts[:depth]) / name).read_text().strip()
            except OSError:
                continue
            if value.isdigit() and int(value) < _NO_LIMIT:
                found.append(int(value))
    return min(found) if found else None


def machine_memory(proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The bot's machine's memory in bytes: the smaller of ``MemTotal`` and its cgroups' limits; None when
    neither can be read (not Linux)."""
    known = [value for value in (_meminfo_total(proc), _cgroup_limit(proc, cgroups)) if value]
    return min(known) if known else None


def reader_memory(configured_mb: float | None, readers_at_once: int, machine: int | None = None) -> ReaderMemory:
    """The bound of the next reader: from ``configured_mb`` (``documents.reader_memory_mb``, MB of 1,000,000
    bytes) when set, else from ``READERS_SHARE`` of ``machine`` (read now when not given; where it cannot be
    read, every reader gets ``READER_MEMORY_MOST``)."""
    if configured_mb is not None:
        budget = int(configured_mb * 1_000_000)
    else:
        total = machine_memory() if machine is None else machine
        budget = int(total * READERS_SHARE) if total else READER_MEMORY_MOST * readers_at_once
    shared = min(READER_MEMORY_MOST, budget // readers_at_once)
    if shared >= READER_MEMORY_FLOOR:
        return ReaderMemory(shared, alone=False, budget=budget, configured=configured_mb is not None)
    return ReaderMemory(
        min(READER_MEMORY_MOST, budget), alone=True, budget=budget, configured=configured_mb is not None
    )
