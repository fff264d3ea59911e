"""Per-conversation history: trimming whole pairs to a budget, storage, and its use in prompts."""

from __future__ import annotations

from messaging_llm_bot.agent.history import (
    CACHED_CONVERSATIONS,
    HistoryStore,
    conversation_dir,
    message_chars,
    trim_history,
)
from messaging_llm_bot.agent.incoming import AgentMessage


def pairs(n: int, size: int = 10) -> list[dict]:
    out = []
    for i in range(n):
        out += [{"role": "user", "content": f"u{i}".ljust(size)}, {"role": "assistant", "content": f"a{i}".ljust(size)}]
    return out


def test_trim_drops_oldest_whole_pairs():
    history = pairs(5)
    pair_size = 2 * message_chars(history[0])
    # Exact trimming (low_water 1.0): just under the budget.
    trimmed = trim_history(history, budget_chars=2 * pair_size + 1, low_water=1.0)
    assert [m["content"].strip() for m in trimmed] == ["u3", "a3", "u4", "a4"]
    assert trim_history(history, 10**6) == history
    assert trim_history(history, 0) == []
    assert trim_history([], 100) == []


def test_trim_with_hysteresis_cuts_to_low_water_and_then_leaves_the_prefix_alone():
    history = pairs(10)
    pair_size = 2 * message_chars(history[0])
    budget = 5 * pair_size
    trimmed = trim_history(history, budget)  # default low water: 60% of the budget
    assert [m["content"].strip() for m in trimmed] == ["u7", "a7", "u8", "a8", "u9", "a9"]
    # Growing again: nothing is dropped until the budget is exceeded, so the prefix is stable.
    grown = trimmed + pairs(12)[-4:-2]
    assert trim_history(grown, budget) == grown
    # A newest pair bigger than the low water mark but within budget is kept alone.
    big = pairs(2) + [{"role": "user", "content": "q" * 70}, {"role": "assistant", "content": "a" * 70}]
    assert [m["content"][0] for m in trim_history(big, 160)] == ["q", "a"]


def test_trim_never_starts_with_an_orphan_assistant_message():
    history = [{"role": "assistant", "content": "greeting"}] + pairs(2)
    trimmed = trim_history(history, budget_chars=2 * 2 * message_chars(history[1]))
    assert trimmed[0]["role"] == "user"


def test_store_appends_trims_and_clears(workspace):
    store = HistoryStore(workspace)
    for i in range(6):
        store.append_pair("tg:1", f"q{i}" * 20, f"a{i}" * 20, budget_chars=300)
    stored = store.load("tg:1")
    assert stored[0]["role"] == "user" and len(stored) % 2 == 0
    assert sum(message_chars(m) for m in stored) <= 300
    assert stored[-1]["content"] == "a5" * 20
    assert workspace.exists(f"{conversation_dir('tg:1')}/history.json")
    assert store.clear("tg:1") == len(stored)
    assert store.load("tg:1") == []


def test_store_keeps_history_in_memory_but_sees_edits_of_the_file(workspace):
    store = HistoryStore(workspace)
    store.append_pair("c1", "first", "one", budget_chars=10_000)
    loaded = store.load("c1")
    loaded[0]["content"] = "changed by the caller"  # callers get copies
    assert [m["content"] for m in store.load("c1")] == ["first", "one"]
    # The owner edits the file by hand: the next load reads the new content.
    workspace.write_text(f"{conversation_dir('c1')}/history.json", '[{"role": "user", "content": "edited"}]')
    assert [m["content"] for m in store.load("c1")] == ["edited"]
    store.append_pair("c1", "second", "two", budget_chars=10_000)
    assert [m["content"] for m in workspace.read_json(f"{conversation_dir('c1')}/history.json")] == [
        "edited",
        "second",
        "two",
    ]
    # Another store (e.g. after a restart) reads the same file.
    assert [m["content"] for m in HistoryStore(workspace).load("c1")] == ["edited", "second", "two"]
    workspace.delete(f"{conversation_dir('c1')}/history.json")
    assert store.load("c1") == []


def test_unreadable_history_counts_as_empty(workspace):
    store = HistoryStore(workspace)
    workspace.write_text(f"{conversation_dir('c1')}/history.json", "{not json")
    assert store.load("c1") == []
    workspace.write_text(
        f"{conversation_dir('c1')}/history.json", '[{"role": "user", "content": "ok"}, {"role": "tool"}, 3]'
    )
    assert store.load("c1") == [{"role": "user", "content": "ok"}]


def test_prompt_history_respects_budget_and_skill_rounds_stay_compact(bot_config, workspace, chat_server, make_agent):
    bot_config["runtime"]["history_budget_chars"] = 150
    agent = make_agent(bot_config, workspace)
    chat_server.enqueue('{"skill": "add", "args": {"a": 1, "b": 2}}', "three")
    agent.handle(AgentMessage("c1", "1+2?"))
    for i in range(5):
        chat_server.enqueue(f"reply {i} " + "y" * 30)
        agent.handle(AgentMessage("c1", f"message {i} " + "x" * 30))
    last = chat_server.chat_requests[-1]["messages"]
    history = last[1:-1]
    assert history and history[0]["role"] == "user"
    assert sum(message_chars(m) for m in history) <= 150
    assert [m["role"] for m in history] == ["user", "assistant"] * (len(history) // 2)
    stored = workspace.read_json("conversations/c1/history.json")
    # The skill round is not in history: only the user's words and the final reply.
    assert all("skill" not in m["content"] and "Result of" not in m["content"] for m in stored)


def test_history_budget_tokens(bot_config, workspace):
    from assistant_framework.config.settings import Settings
    from messaging_llm_bot.agent.settings import history_budget_chars

    bot_config["runtime"]["history_budget_tokens"] = 100
    assert history_budget_chars(Settings.from_config(bot_config).runtime) == 400


def test_histories_in_memory_are_bounded_and_one_left_out_is_read_from_its_file(
    bot_config, workspace, chat_server, make_agent
):
    """A year of mail threads, topics and sessions: only the histories used last stay in memory (every one
    was kept, up to about 30 kB each); a conversation used again after many others still has its history."""
    agent = make_agent(bot_config, workspace)
    agent.handle(AgentMessage("mail:first", "the dentist is on Friday at ten"))
    for n in range(CACHED_CONVERSATIONS + 20):
        agent.handle(AgentMessage(f"mail:thread-{n}", f"message {n}"))
    assert len(agent.history._cache) <= CACHED_CONVERSATIONS
    agent.handle(AgentMessage("mail:first", "when is the dentist?"))
    request = chat_server.chat_requests[-1]["messages"]
    assert any("the dentist is on Friday at ten" in str(m["content"]) for m in request[1:-1])
