"""The turns a channel runs, and what a turn leaves running: an answered item is completed beside the chat's
next turn (conversation/item_turns.py ``finish(beside_next=True)``), and a graceful stop waits for that too."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from assistant_framework.inbox import Inbox
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.item_turns import ItemTurns
from messaging_llm_bot.conversation.turns import RunningTurns


def test_wait_idle_waits_for_what_a_turn_leaves_running():
    async def main() -> tuple[bool, list[str]]:
        turns = RunningTurns()
        done: list[str] = []

        # Short sleeps (they were 0.2 s and 0.05 s): one event loop runs them in the same order at any length.
        async def left_behind() -> None:
            await asyncio.sleep(0.02)
            done.append("left behind")

        async def turn() -> None:
            with turns.tracking():
                await asyncio.sleep(0.01)
                turns.track(asyncio.get_running_loop().create_task(left_behind()))

        task = asyncio.get_running_loop().create_task(turn())
        await asyncio.sleep(0)  # the turn is running
        idle = await turns.wait_idle(10)
        await task
        return idle, done

    idle, done = asyncio.run(main())
    assert idle and done == ["left behind"]


def test_wait_idle_says_when_turns_are_still_running():
    async def main() -> tuple[bool, int]:
        turns = RunningTurns()
        turns.track(asyncio.get_running_loop().create_task(asyncio.sleep(30)))
        idle = await turns.wait_idle(0.05)
        return idle, turns.cancel_all()

    assert asyncio.run(main()) == (False, 1)


def _answered(tmp_path) -> tuple[Inbox, ItemTurns, str]:
    workspace = Workspace(tmp_path / "ws")
    inbox = Inbox(workspace)
    item = inbox.accept("42", "chat:1", {"text": "hello"})
    assert item is not None
    inbox.record_reply(item.item_id, "hi")
    inbox.record_part(item.item_id, 0, 7)
    turns = ItemTurns(SimpleNamespace(workspace=workspace), inbox, "test")  # type: ignore[arg-type]
    return inbox, turns, item.item_id


def test_an_answered_item_is_completed_beside_the_next_turn_and_a_stop_waits_for_it(tmp_path):
    inbox, turns, item_id = _answered(tmp_path)

    async def main() -> tuple[bool, bool]:
        item = inbox.get(item_id)
        assert item is not None
        await turns.finish(item, [], [], beside_next=True)
        still_pending = inbox.get(item_id) is not None  # the chat's next turn may start now
        return still_pending, await turns.wait_idle(10)

    assert asyncio.run(main()) == (True, True)
    assert inbox.get(item_id) is None
    assert not turns.inbox.ws.list("state/inbox/pending/*/*")  # the item and its ledger


def test_without_beside_next_the_item_is_completed_before_finish_returns(tmp_path):
    inbox, turns, item_id = _answered(tmp_path)

    async def main() -> bool:
        item = inbox.get(item_id)
        assert item is not None
        await turns.finish(item, [], [])
        return inbox.get(item_id) is None

    assert asyncio.run(main())
