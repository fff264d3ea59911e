"""What a small-context model is sent, and what the user reads when a request does not fit:
the agent against the loopback fake model server enforcing a context size (no mocks)."""

from __future__ import annotations

import pytest

from messaging_llm_bot.agent.incoming import AgentMessage

N_CTX = 4096  # tokens of the fake server's context; ~4 characters a token, as the fake counts
LIMIT_CHARS = 18_000  # the context in characters for the skill-results test: the system prompt (~8,700 with every
# built-in skill) and two of the three results fit, the third does not


def small_context(wording: dict):
    """A handler answering like a server with an N_CTX context: the error body ``wording`` when
    the request is longer, else a reply."""

    def handle(request: dict):
        tokens = sum(len(str(m.get("content") or "")) for m in request["messages"]) // 4
        if tokens > N_CTX:
            return {"status": 400, "body": wording}
        return '{"reply": "fine"}'

    return handle


LLAMA_CPP = {
    "error": {
        "code": 400,
        "message": "request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_ctx": N_CTX,
    }
}
OPENAI = {
    "error": {"message": f"This model's maximum context length is {N_CTX} tokens.", "code": "context_length_exceeded"}
}


@pytest.mark.parametrize("wording", [LLAMA_CPP, OPENAI], ids=["llama.cpp", "openai"])
def test_a_pasted_message_too_long_for_the_model_gets_one_sentence_saying_what_to_do(
    bot_config, workspace, chat_server, wording, make_agent
):
    chat_server.set_handler(small_context(wording))
    agent = make_agent(bot_config, workspace)
    for i in range(2):
        assert agent.handle(AgentMessage("c1", f"hello {i}")).ok
    before = workspace.read_text("conversations/c1/history.json")
    result = agent.handle(AgentMessage("c1", "summarise this:\n" + "word " * 20_000))  # a 100 KB paste
    assert not result.ok
    reply = result.reply
    assert "message is too long" in reply and "shorter" in reply and "as a file" in reply
    assert "conversation is too long" not in reply  # /reset would not help: the message alone does not fit
    assert "Traceback" not in reply and len(reply) < 300 and reply.count(". ") <= 2
    assert workspace.read_text("conversations/c1/history.json") == before


def test_a_long_conversation_still_names_the_conversation(bot_config, workspace, chat_server, make_agent):
    # Short message, but the rest of the request does not fit even after the history cut: the
    # message itself is not to blame, so the user is not told to shorten it.
    chat_server.set_handler(small_context(OPENAI))
    bot_config["runtime"]["base_prompt"] = "Be brief. " * 2_000  # ~5,000 tokens on its own
    bot_config["runtime"]["section_caps"] = {"base": 100_000}
    result = make_agent(bot_config, workspace).handle(AgentMessage("c1", "hi"))
    assert not result.ok and "too long" in result.reply and "message is too long" not in result.reply


def test_skill_results_that_outgrow_a_small_context_are_cut_and_the_turn_finishes(
    bot_config, workspace, chat_server, make_agent
):
    """Three rounds of long skill results fit the first requests, not the last: the earlier results are
    cut and the request sent again, so the owner gets an answer instead of "too long"."""
    for name in ("alpha", "beta", "gamma"):
        workspace.write_text(f"notes/{name}.md", f"{name} " * 700)  # ~4,000 characters each
    seen: list[int] = []

    def handle(request: dict):
        size = sum(len(str(m.get("content") or "")) for m in request["messages"])
        seen.append(size)
        if size > LIMIT_CHARS:
            return {"status": 400, "body": OPENAI}
        rounds = sum(1 for m in request["messages"][1:] if m["role"] == "assistant")
        if rounds < 3:
            return '{"skill": "read_note", "args": {"name": "%s"}}' % ("alpha", "beta", "gamma")[rounds]
        return '{"reply": "Read all three."}'

    chat_server.set_handler(handle)
    bot_config["llm"]["max_skill_rounds"] = 4
    result = make_agent(bot_config, workspace).handle(AgentMessage("c1", "read alpha, beta and gamma"))
    assert result.ok and result.reply == "Read all three.", result.reply
    assert any(size > LIMIT_CHARS for size in seen) and seen[-1] <= LIMIT_CHARS
    last = chat_server.chat_requests[-1]["messages"]
    assert "earlier result cut" in last[3]["content"] and "gamma gamma" in last[-1]["content"]  # the last result whole
