"""The served endpoints as the bot assembles them (docs/serve.md): the owner's memory for MCP clients (memory),
and the OpenAI-compatible endpoint that runs the agent (openai_api). Mounted on the web server by the CLI."""
