"""The Matrix channel against a real Synapse (tests/matrix_harness.py): in-process for the variations."""

from __future__ import annotations

from tests.matrix_harness import MatrixWorld
from tests.waiting import wait_until


def test_the_owner_in_a_direct_room_gets_one_answer_there(matrix: MatrixWorld, start_matrix, chat_server) -> None:
    room = matrix.direct_room()
    chat_server.enqueue('{"reply": "Paris is the capital."}')
    start_matrix()
    wait_until(lambda: matrix.joined(room), timeout=20, what="the bot to join the owner's room")
    matrix.owner.send(room, "What is the capital of France?")
    wait_until(lambda: matrix.owner.texts(room, matrix.bot.user_id), timeout=30, what="the answer")
    assert matrix.owner.texts(room, matrix.bot.user_id) == ["Paris is the capital."]
    assert len(chat_server.chat_requests) == 1
