"""The web chat: the owner talks to the assistant on the local web page (docs/web.md#chat)."""
