"""Chat surfaces, one folder each (telegram/, signal/, matrix/, whatsapp/, slack/, discord/, email/, webchat/,
console/): adapters between a platform and the conversation service (messaging_llm_bot/conversation/), with
the records they all speak (contract), the registry's start-up, setup and doctor (run, setup, doctor). A
channel never imports another channel."""
