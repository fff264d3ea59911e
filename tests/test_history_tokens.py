"""runtime.history_budget_tokens is kept in estimated tokens, also for text that is not ASCII
(Cyrillic, CJK: one to two characters a token, not four); against the fake model server."""

from __future__ import annotations

import pytest

from assistant_framework.tokens import estimate_tokens
from messaging_llm_bot.agent.incoming import AgentMessage

BUDGET_TOKENS = 200


@pytest.mark.parametrize("word", ["слово ", "言葉", "word "], ids=["cyrillic", "cjk", "ascii"])
def test_history_in_the_prompt_stays_within_the_token_budget(bot_config, workspace, chat_server, word, make_agent):
    bot_config["runtime"]["history_budget_tokens"] = BUDGET_TOKENS
    agent = make_agent(bot_config, workspace)
    for i in range(8):
        chat_server.enqueue(f"{i} " + word * 20)
        assert agent.handle(AgentMessage("c1", f"{i} " + word * 20)).ok
    history = chat_server.chat_requests[-1]["messages"][1:-1]
    assert history and history[0]["role"] == "user"  # something is kept, whole pairs
    assert sum(estimate_tokens(m["content"]) for m in history) <= BUDGET_TOKENS
    stored = workspace.read_json("conversations/c1/history.json")
    assert sum(estimate_tokens(m["content"]) for m in stored) <= BUDGET_TOKENS
