"""conversation/albums.py's wait for an album's parts, in one event loop with a clock the test moves: the first
part's turn waits while parts keep coming (each one starts the quiet while again), until none came for the quiet
while, the album is full or it was waited for long enough; the later parts are answered with it, once; the
parts the last run left are not waited for. No test here waits out a window: the clock moves instead, and a
part's arrival wakes the wait. Through the real Telegram bot: tests/test_telegram_albums.py."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from messaging_llm_bot.conversation.albums import MAX_ALBUM_PARTS, Albums

#: (album key or None, the part's id)
Part = tuple[str | None, int]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _albums(clock: Clock, quiet: float = 10.0, max_wait: float = 100.0) -> Albums[Part]:
    return Albums(lambda part: part[0], lambda part: part[1], quiet=quiet, max_wait=max_wait, clock=clock)


async def _settle() -> None:
    """Let the waiting turn run until it waits again (or ends)."""
    for _ in range(20):
        await asyncio.sleep(0)


def _run(scenario: Callable[[], Awaitable[object]]) -> object:
    return asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_part_that_comes_while_the_first_waits_joins_it_and_starts_the_quiet_while_again() -> None:
    clock = Clock()
    albums = _albums(clock)

    async def scenario() -> list[Part]:
        first = asyncio.create_task(albums.gather(("A", 1)))
        await _settle()
        clock.now = 9.0  # within the first part's quiet while (10)
        albums.arrived(("A", 2))
        await _settle()
        assert not first.done()
        clock.now = 18.0  # past the first part's quiet while, within the second's
        albums.arrived(("A", 2))  # the same part again (a replay): noted once, and no new wait
        albums.arrived(("A", 3))
        await _settle()
        assert not first.done()
        clock.now = 150.0  # past the longest wait from the first part (100)
        albums.arrived(("A", 4))
        return await first

    assert _run(scenario) == [("A", 1), ("A", 2), ("A", 3), ("A", 4)]
    assert albums.taken(("A", 2)) and albums.taken(("A", 4))
    assert not albums.taken(("A", 2))  # once
    assert not albums.taken(("A", 1))  # the first part is its own turn


def test_a_full_album_is_answered_at_once_and_a_part_after_it_starts_an_album_of_its_own() -> None:
    clock = Clock()
    albums = _albums(clock)

    async def scenario() -> tuple[list[Part], list[Part]]:
        first = asyncio.create_task(albums.gather(("A", 1)))
        await _settle()
        for n in range(2, MAX_ALBUM_PARTS + 1):
            albums.arrived(("A", n))
        await _settle()
        assert first.done()  # full: no quiet while waited for
        albums.arrived(("A", 99))
        late = asyncio.create_task(albums.gather(("A", 99)))
        await _settle()
        assert not late.done()  # an album of its own, waiting for its own parts
        clock.now = 11.0
        albums.arrived(("B", 1))  # another album's part wakes no other album's wait
        await _settle()
        assert not late.done()
        albums.arrived(("A", 100))
        await _settle()
        clock.now = 22.0
        albums.arrived(("A", 101))
        await _settle()
        clock.now = 40.0  # past the quiet while after the last new part (22 + 10)
        albums.arrived(("A", 101))  # the same part again: not a new part, so it wakes no wait
        await _settle()
        assert not late.done()
        clock.now = 200.0
        albums.arrived(("A", 102))
        return first.result(), await late

    full, late = _run(scenario)  # type: ignore[misc]
    assert full == [("A", n) for n in range(1, MAX_ALBUM_PARTS + 1)]
    assert late == [("A", 99), ("A", 100), ("A", 101), ("A", 102)]


def test_parts_beyond_a_full_album_make_an_album_of_their_own() -> None:
    clock = Clock()
    albums = _albums(clock)

    async def scenario() -> tuple[list[Part], list[Part]]:
        first = asyncio.create_task(albums.gather(("A", 1)))
        await _settle()
        for n in range(2, MAX_ALBUM_PARTS + 2):  # one more than fits, handed on before the first's turn wakes
            albums.arrived(("A", n))
        full = await first
        clock.now = 200.0  # past the longest wait of the album the last part started
        return full, await albums.gather(("A", MAX_ALBUM_PARTS + 1))

    full, rest = _run(scenario)  # type: ignore[misc]
    assert full == [("A", n) for n in range(1, MAX_ALBUM_PARTS + 1)]
    assert rest == [("A", MAX_ALBUM_PARTS + 1)]


def test_the_wait_ends_once_no_part_came_for_the_quiet_while() -> None:
    albums = Albums[Part](lambda part: part[0], lambda part: part[1], quiet=0.01, max_wait=100)

    async def scenario() -> list[Part]:
        albums.arrived(("A", 2))  # handed on before the first part's turn ran
        return await albums.gather(("A", 1))

    assert set(_run(scenario)) == {("A", 1), ("A", 2)}  # type: ignore[arg-type]


def test_the_parts_the_last_run_left_and_a_message_of_no_album_are_not_waited_for() -> None:
    clock = Clock()
    albums = _albums(clock)

    async def scenario() -> tuple[list[Part], list[Part]]:
        albums.arrived(("L", 1), left=True)
        albums.arrived(("L", 2), left=True)
        albums.arrived((None, 3))  # no album's part: nothing to note
        left = asyncio.create_task(albums.gather(("L", 1)))
        alone = asyncio.create_task(albums.gather((None, 3)))
        await _settle()
        assert left.done() and alone.done()
        return left.result(), alone.result()

    assert _run(scenario) == ([("L", 1), ("L", 2)], [(None, 3)])


def test_a_turn_cancelled_as_a_part_comes_ends_at_once() -> None:
    """The stop cancels the first part's turn in the same pass of the loop as the next part comes: the turn ends
    cancelled, and no part is noted as answered. (``asyncio.wait_for`` returned then on Python 3.11, the cancel
    lost: the turn waited on for the album and answered it after the stop.)"""
    clock = Clock()
    albums = _albums(clock)

    async def scenario() -> None:
        first = asyncio.create_task(albums.gather(("A", 1)))
        await _settle()
        albums.arrived(("A", 2))
        first.cancel()
        await _settle()
        assert first.cancelled()

    _run(scenario)
    assert not albums.taken(("A", 2))
