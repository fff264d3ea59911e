"""Chat surfaces, one folder each (telegram/, signal/, console/): adapters between a platform and the
conversation service (messaging_llm_bot/conversation/). A channel never imports another channel."""
