"""What a small-context model is sent, and what the user reads when a request does not fit:
the agent against the loopback fake model server enforcing a context size (no mocks)."""

from __future__ import annotations

import pytest

from tests.test_agent import make_agent

N_CTX = 4096  # tokens of the fake server's context; ~4 characters a token, as the fake counts


def small_context(wording: dict):
    """A handler answering like a server with an N_CTX context: the error body ``wording`` when
    the request is longer, else a reply."""

    def handle(request: dict):
        tokens = sum(len(str(m.get("content") or "")) for m in request["messages"]) // 4
        if tokens > N_CTX:
            return {"status": 400, "body": wording}
        return '{"reply": "fine"}'

    return handle


LLAMA_CPP = {"error": {"code": 400, "message": "request exceeds the available context size, try increasing it",
                       "type": "exceed_context_size_error", "n_ctx": N_CTX}}
OPENAI = {"error": {"message": f"This model's maximum context length is {N_CTX} tokens.", "code": "context_length_exceeded"}}


@pytest.mark.parametrize("wording", [LLAMA_CPP, OPENAI], ids=["llama.cpp", "openai"])
def test_a_pasted_message_too_long_for_the_model_gets_one_sentence_saying_what_to_do(bot_config, workspace, chat_server, wording):
    chat_server.set_handler(small_context(wording))
    agent = make_agent(bot_config, workspace)
    for i in range(2):
        assert agent.handle_message("c1", f"hello {i}").ok
    before = workspace.read_text("conversations/c1/history.json")
    result = agent.handle_message("c1", "summarise this:\n" + "word " * 20_000)  # a 100 KB paste
    assert not result.ok
    reply = result.reply
    assert "message is too long" in reply and "shorter" in reply and "as a file" in reply
    assert "conversation is too long" not in reply  # /reset would not help: the message alone does not fit
    assert "Traceback" not in reply and len(reply) < 300 and reply.count(". ") <= 2
    assert workspace.read_text("conversations/c1/history.json") == before


def test_a_long_conversation_still_names_the_conversation(bot_config, workspace, chat_server):
    # Short message, but the rest of the request does not fit even after the history cut: the
    # message itself is not to blame, so the user is not told to shorten it.
    chat_server.set_handler(small_context(OPENAI))
    bot_config["runtime"]["base_prompt"] = "Be brief. " * 2_000  # ~5,000 tokens on its own
    bot_config["runtime"]["section_caps"] = {"base": 100_000}
    result = make_agent(bot_config, workspace).handle_message("c1", "hi")
    assert not result.ok and "too long" in result.reply and "message is too long" not in result.reply
