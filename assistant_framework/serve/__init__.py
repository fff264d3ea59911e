"""Serving the owner's assistant to other programs (docs/serve.md): the configured clients and their tokens
(clients), the owner's memory as an MCP server (memory_tools, mcp_server); the OpenAI-compatible endpoint
needs the agent and lives in the bot package."""
