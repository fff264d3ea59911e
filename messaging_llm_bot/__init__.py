"""The bot on the framework: the agent loop (agent), the model client (llm), the JSON skill protocol (protocol),
the chat channels (channels) and what they share (conversation), the operator CLI (cli), setup and doctor (ops)
and the served endpoints (serve); ``runtime`` and ``parts`` build it from the config."""
