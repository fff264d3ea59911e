"""Per-conversation ordering and cross-conversation parallelism of the agent."""

from __future__ import annotations

import threading
import time

from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.agent.locks import ConversationLock


def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.005)


def test_one_conversation_is_answered_strictly_in_order(bot_config, workspace, chat_server, make_agent):
    def answer(request):
        user = request["messages"][-1]["content"].split("\n")[0]
        if user == "msg0":  # held until all five wait in the conversation (was: every answer 0.05 s late)
            wait_until(lambda: agent.pending("c1") == 5)
        return f"answer to {user}"

    chat_server.set_handler(answer)
    agent = make_agent(bot_config, workspace)
    results: dict[int, str] = {}
    threads = []
    for i in range(5):
        thread = threading.Thread(
            target=lambda i=i: results.__setitem__(i, agent.handle(AgentMessage("c1", f"msg{i}")).reply)
        )
        thread.start()
        threads.append(thread)
        # The next message is sent only once this one is queued (or being answered).
        wait_until(lambda i=i: agent.pending("c1") >= i + 1 or len(results) > i)
    for thread in threads:
        thread.join(timeout=20)
    requests = chat_server.chat_requests
    assert [r["messages"][-1]["content"].split("\n")[0] for r in requests] == [f"msg{i}" for i in range(5)]
    for k, request in enumerate(requests):
        # Each request sees every earlier pair: the history never forks.
        history = [m["content"] for m in request["messages"][1:-1]]
        assert history == [x for j in range(k) for x in (f"msg{j}", f"answer to msg{j}")]
    stored = workspace.read_json("conversations/c1/history.json")
    assert [m["content"] for m in stored] == [x for j in range(5) for x in (f"msg{j}", f"answer to msg{j}")]
    assert results == {i: f"answer to msg{i}" for i in range(5)}


def test_conversations_call_the_model_in_parallel(bot_config, workspace, chat_server, make_agent):
    bot_config["llm"]["max_concurrency"] = 4
    # Each model call waits until all four are in flight at once; serialised calls would never get
    # there and time out (start-up speed does not matter, only that the four overlap).
    all_in = threading.Barrier(4, timeout=15)
    met: list[bool] = []

    def meet(request):
        try:
            all_in.wait()
            met.append(True)
        except threading.BrokenBarrierError:
            met.append(False)
        return "done"

    chat_server.set_handler(meet)
    agent = make_agent(bot_config, workspace)
    replies: dict[int, str | None] = {}
    threads = [
        threading.Thread(target=lambda i=i: replies.__setitem__(i, agent.handle(AgentMessage(f"c{i}", "hi")).reply))
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert met == [True] * 4
    assert replies == {i: "done" for i in range(4)}  # each answered by its first call, none timed out


def test_max_concurrency_one_serialises_model_calls(bot_config, workspace, chat_server, make_agent):
    bot_config["llm"]["max_concurrency"] = 1
    intervals: list[tuple[float, float]] = []
    guard = threading.Lock()

    def slow(request):
        start = time.monotonic()
        time.sleep(0.05)
        with guard:
            intervals.append((start, time.monotonic()))
        return "done"

    chat_server.set_handler(slow)
    agent = make_agent(bot_config, workspace)
    threads = [threading.Thread(target=agent.handle, args=(AgentMessage(f"c{i}", "hi"),)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    ordered = sorted(intervals)
    assert len(ordered) == 3
    assert all(ordered[i][1] <= ordered[i + 1][0] for i in range(2))


def test_conversation_lock_is_fifo_and_reentrant():
    lock = ConversationLock()
    order: list[int] = []
    lock.acquire()
    lock.acquire()  # re-entrant
    threads = []
    for i in range(5):

        def work(i=i):
            with lock:
                order.append(i)

        thread = threading.Thread(target=work)
        thread.start()
        threads.append(thread)
        wait_until(lambda i=i: lock.pending == i + 2)
    lock.release()
    assert order == []  # still held once
    lock.release()
    for thread in threads:
        thread.join(timeout=5)
    assert order == [0, 1, 2, 3, 4]
    assert lock.pending == 0
