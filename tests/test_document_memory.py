"""The document readers' memory fits the machine (docs/documents.md, "The bounds"): each reader took 2 GiB of
address space, two at once, also on a Raspberry Pi or a VPS of 1 GB, where a large or crafted file could bring
the OOM killer onto the bot. Now the readers together take at most half of the machine's memory (the smaller of
``MemTotal`` and the bot's cgroup limit) or ``documents.reader_memory_mb``; a reader runs alone when half of
that is too little for two, and no reader runs when even the whole is.

The bot is told the figure through ``documents.reader_memory_mb`` (the seam users have too); the machine's own
figure is read from a ``/proc`` and a ``/sys/fs/cgroup`` laid out as Linux, systemd and Docker lay them out."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant_framework.media.reader_memory import (
    READER_MEMORY_FLOOR,
    READER_MEMORY_MOST,
    machine_memory,
    reader_memory,
)
from messaging_llm_bot.conversation import documents
from tests.crash_bot import BotProcess, sent_texts, write_bot_config
from tests.documents_data import crowded_docx, pdf_pages
from tests.telegram_harness import OWNER, texts

MEMORY_SENTENCE = "but I cannot read it: reading it took more memory than a document may."


@pytest.mark.subprocess  # the bot process and its document readers
@pytest.mark.timeout(120)
def test_a_reader_over_the_machines_bound_is_stopped_in_one_sentence_and_a_pdf_still_reads(
    tmp_path: Path, bot_config: dict, fake, chat_server
) -> None:
    """The bot process with 300 MB for its readers (a small machine's half): two readers of 150 MB each. A Word
    file of 86 KB whose tree needs about 300 MiB is stopped at its reader's bound with the memory sentence, the
    file kept (with 2 GiB it was read: fails without the machine's bound, checked; and its reader's out-of-memory
    was "not a DOCX file I can read (XMLSyntaxError)" before, checked); then a 30-page PDF is read as ever."""
    chat_server.set_handler(lambda request: '{"reply": "Read it."}')
    config = write_bot_config(
        tmp_path / "config.json", bot_config, fake, allowed=[OWNER], extra={"documents": {"reader_memory_mb": 300}}
    )
    workspace = tmp_path / "workspace"
    with BotProcess(config, workspace, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        fake.send_document(OWNER, "minutes.docx", crowded_docx(), mime_type="application/octet-stream")
        fake.wait_for(lambda: sent_texts(fake, OWNER), timeout=60)
        (refused,) = sent_texts(fake, OWNER)
        assert refused.startswith("📄 I saved minutes.docx at inbox/") and refused.endswith(MEMORY_SENTENCE), refused
        assert "\n" not in refused and chat_server.chat_requests == []
        assert list(workspace.glob("inbox/*/minutes.docx")) and not list(workspace.glob("inbox/*/*.text.md"))
        fake.send_document(OWNER, "report.pdf", pdf_pages(), caption="read this", mime_type="application/pdf")
        fake.wait_for(lambda: "Read it." in sent_texts(fake, OWNER), timeout=60)
        assert bot.terminate() == 0
        assert "Traceback" not in bot.run_log()
    (turn,) = [request["messages"][-1]["content"] for request in chat_server.chat_requests]
    assert "[Document text] 30 pages" in turn and "[page 1]\nPage 1 of the garden report." in turn


@pytest.mark.subprocess  # the document reader's worker process
def test_with_room_for_one_reader_the_documents_are_read_one_at_a_time(fake, start_bot, chat_server, slow_reader):
    """200 MB for the readers: too little for two of 150 MB, so each reader runs alone with the 200 MB, and
    three chats sending a PDF in the same moment are each answered, one reader after the other (two ran at once
    before: fails without the reader running alone, checked)."""
    watch = slow_reader(0.5)
    friends = [2, 3]
    start_bot(
        allowed_user_ids=[OWNER, *friends],
        config_patch=lambda config: config.update(documents={"reader_memory_mb": 200}),
    )
    chat_server.enqueue(*['{"reply": "Read it."}'] * 3)
    for user in [OWNER, *friends]:
        fake.send_document(user, f"report-{user}.pdf", pdf_pages(pages=2, sentence_page=1), mime_type="application/pdf")
    for user in [OWNER, *friends]:
        fake.wait_for(lambda user=user: "Read it." in texts(fake, user), timeout=40)
    assert watch.counts() == [1, 1, 1]  # each had its reader, and found none running beside it
    turns = [request["messages"][-1]["content"] for request in chat_server.chat_requests]
    assert len(turns) == 3 and all("[Document text] 2 pages" in turn for turn in turns), turns
    assert documents.READERS.taken == 0


@pytest.mark.subprocess  # a reader process must not start
def test_below_the_floor_no_reader_starts_and_the_document_is_refused_in_one_sentence(
    fake, start_bot, chat_server, workspace, slow_reader
):
    """100 MB for the readers, below the 150 MB one needs: the PDF is refused in one sentence that says so, the
    file kept, no reader process started and no model turn; a text file (read in the bot, not in a reader)
    still goes to the model."""
    watch = slow_reader(0)
    start_bot(config_patch=lambda config: config.update(documents={"reader_memory_mb": 100}))
    chat_server.enqueue('{"reply": "Got the notes."}')
    fake.send_document(OWNER, "report.pdf", pdf_pages(), mime_type="application/pdf")
    (reply,) = fake.wait_for_messages(OWNER, 1, timeout=20)
    assert reply["text"].startswith("📄 I saved report.pdf at inbox/") and reply["text"].endswith(
        "but I cannot read it: a document reader needs 150 MB of memory and this machine can spare only 100 MB for it."
    ), reply["text"]
    assert [p for p in workspace.list("inbox/**/*") if p.endswith("report.pdf")] and watch.counts() == []
    assert chat_server.chat_requests == []
    fake.send_document(OWNER, "notes.txt", b"The heron is back.", mime_type="text/plain")
    fake.wait_for(lambda: "Got the notes." in texts(fake), timeout=20)
    assert "The heron is back." in chat_server.chat_requests[0]["messages"][-1]["content"]


# -- the machine's figure: /proc and /sys/fs/cgroup as Linux lays them out -------------------------------------


def _machine(tmp_path: Path, total_kb: int, cgroup: str, limits: dict[str, str]) -> tuple[Path, Path]:
    """A ``/proc`` (``meminfo``, ``self/cgroup``) and a ``/sys/fs/cgroup`` holding ``limits`` (path: value)."""
    proc, cgroups = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal:       {total_kb} kB\nMemFree:          1000 kB\nMemAvailable: 9 kB\n")
    (proc / "self" / "cgroup").write_text(cgroup)
    cgroups.mkdir()
    for rel, value in limits.items():
        (cgroups / rel).parent.mkdir(parents=True, exist_ok=True)
        (cgroups / rel).write_text(value + "\n")
    return proc, cgroups


def test_the_machines_memory_is_the_smallest_of_memtotal_and_the_cgroup_limits(tmp_path):
    """A Raspberry Pi of 1 GB: its MemTotal. A systemd service with ``MemoryMax=512M`` (cgroup v2, the slice
    above without a limit): 512 MiB. A Docker container with ``--memory 300m`` on cgroup v1, whose cgroup path
    names folders the container does not see: the limit at its mount's top. No limit (v1's 2**63 rounded to a
    page, v2's "max"): MemTotal. Nothing readable: None, and each reader gets 2 GiB as before."""
    pi = _machine(tmp_path / "pi", 944_000, "0::/\n", {"cgroup.controllers": "cpu memory"})
    assert machine_memory(*pi) == 944_000 * 1024
    service = _machine(
        tmp_path / "service",
        4_000_000,
        "0::/system.slice/assistant.service\n",
        {"system.slice/assistant.service/memory.max": str(512 * 1024**2), "system.slice/memory.max": "max"},
    )
    assert machine_memory(*service) == 512 * 1024**2
    docker = _machine(
        tmp_path / "docker",
        8_000_000,
        "12:pids:/docker/abc\n4:cpu,memory:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n",
        {"memory/memory.limit_in_bytes": str(300 * 1024**2)},
    )
    assert machine_memory(*docker) == 300 * 1024**2
    free = _machine(
        tmp_path / "free", 2_000_000, "4:memory:/user.slice\n", {"memory/memory.limit_in_bytes": "9223372036854771712"}
    )
    assert machine_memory(*free) == 2_000_000 * 1024
    assert machine_memory(tmp_path / "none", tmp_path / "none") is None


def test_the_readers_share_half_the_machine_two_at_once_alone_or_none():
    """Half the machine for the readers: on a Pi of 1 GB two readers of 241 MB; on a VPS of 512 MB one of
    268 MB alone; on 256 MB none; on 16 GB two of 2 GiB (the most one takes). The config key replaces the
    machine's figure."""
    pi = reader_memory(None, 2, machine=944_000 * 1024)
    assert (pi.per_reader // 1_000_000, pi.alone, pi.fits) == (241, False, True)
    vps = reader_memory(None, 2, machine=512 * 1024**2)
    assert (vps.per_reader // 1_000_000, vps.alone, vps.fits) == (268, True, True)
    assert not reader_memory(None, 2, machine=256 * 1024**2).fits
    big = reader_memory(None, 2, machine=16 * 1024**3)
    assert (big.per_reader, big.alone) == (READER_MEMORY_MOST, False)
    configured = reader_memory(300, 2, machine=16 * 1024**3)
    assert (configured.per_reader, configured.alone, configured.configured) == (150_000_000, False, True)
    assert not reader_memory(100, 2, machine=16 * 1024**3).fits
    assert READER_MEMORY_FLOOR == 150_000_000  # the sentence's "150 MB"
