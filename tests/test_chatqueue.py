"""The chat queues' rules on their own (conversation/chatqueue.py): arrival order per chat, round robin
between chats, the owner's jobs first with a slot kept for them, the bound per chat and its one
notice per backlog. The bots' end-to-end behaviour is in tests/test_chat_fairness.py."""

from __future__ import annotations

import asyncio

from messaging_llm_bot.conversation.chatqueue import ChatQueues


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_order_round_robin_owner_first_and_the_owners_slot():
    async def scenario() -> tuple[list[str], list[str], bool]:
        queues = ChatQueues("test", lambda: 3, lambda: 4)
        gates = {name: asyncio.Event() for name in ("a1", "a2", "a3", "b1", "c1", "o1")}
        started: list[str] = []

        async def job(name: str) -> None:
            started.append(name)
            await gates[name].wait()

        runs = [
            asyncio.ensure_future(queues.run(queues.admit(chat, owner=False), job(name)))
            for chat, name in [("A", "a1"), ("A", "a2"), ("A", "a3"), ("B", "b1"), ("C", "c1")]
        ]
        await _settle()
        first = list(started)  # two of the three slots for other chats: one is kept for the owner
        runs.append(asyncio.ensure_future(queues.run(queues.admit("O", owner=True), job("o1"))))
        await _settle()
        owner_at_once = started[-1] == "o1"
        for name in ("a1", "b1", "c1", "a2", "o1", "a3"):
            gates[name].set()
            await _settle()
        await asyncio.gather(*runs)
        return first, started, owner_at_once

    first, started, owner_at_once = asyncio.run(scenario())
    assert first == ["a1", "b1"]  # A's first job, then B (never served) before A's second
    assert owner_at_once  # the kept slot: the owner starts at once although others wait
    assert started.index("c1") < started.index("a2")  # round robin: C before A's second job
    assert started.index("a2") < started.index("a3")  # one chat's jobs in arrival order


def test_owner_job_goes_before_jobs_that_waited_longer():
    async def scenario() -> list[str]:
        queues = ChatQueues("test", lambda: 1, lambda: 10)
        gate = asyncio.Event()
        started: list[str] = []

        async def job(name: str) -> None:
            started.append(name)
            await gate.wait()

        runs = [asyncio.ensure_future(queues.run(queues.admit(c), job(c))) for c in ("A", "B", "C")]
        runs.append(asyncio.ensure_future(queues.run(queues.admit("O", owner=True), job("O"))))
        await _settle()
        gate.set()
        await asyncio.gather(*runs)
        return started

    assert asyncio.run(scenario()) == ["A", "O", "B", "C"]  # one slot: the owner's job is next, not last


def test_the_bound_per_chat_and_one_notice_per_backlog():
    async def scenario() -> tuple[list[bool], list[bool], bool, bool]:
        queues = ChatQueues("test", lambda: 2, lambda: 2)
        gate = asyncio.Event()

        async def job() -> None:
            await gate.wait()

        runs = [asyncio.ensure_future(queues.run(queues.admit("F"), job())) for _ in range(2)]
        refused = [queues.admit("F") is None, queues.admit("F") is None]
        notices = [queues.refused("F"), queues.refused("F")]
        owner = queues.admit("F", owner=True)  # the owner's message in that chat is never refused
        runs.append(asyncio.ensure_future(queues.run(owner, job())))
        gate.set()
        await asyncio.gather(*runs)
        again = queues.admit("F")  # caught up: admitted again
        await queues.run(again, job())
        return refused, notices, owner is not None, again is not None

    refused, notices, owner_admitted, again = asyncio.run(scenario())
    assert refused == [True, True] and notices == [True, False]
    assert owner_admitted and again


def test_a_job_runs_item_offered_again_while_it_waits_or_runs_is_answered_once():
    """ChatTasks.spawn_once (conversation/chattasks.py): the scheduler offers a job run's item at each look
    until it is completed; a second offer while the first waits or runs starts nothing, one after it does."""
    from messaging_llm_bot.conversation.chattasks import ChatTasks

    async def scenario() -> list[str]:
        tasks = ChatTasks(ChatQueues("test", lambda: 1, lambda: 4), "test")
        gate, runs = asyncio.Event(), []

        async def answer() -> None:
            runs.append("job:1")
            await gate.wait()

        tasks.spawn_once("job:1", "owner", answer)
        await _settle()
        tasks.spawn_once("job:1", "owner", answer)  # the next look, while it runs
        await _settle()
        gate.set()
        await _settle()
        tasks.spawn_once("job:1", "owner", answer)  # after it ended (not completed: offered again)
        await _settle()
        return runs

    assert asyncio.run(scenario()) == ["job:1", "job:1"]
