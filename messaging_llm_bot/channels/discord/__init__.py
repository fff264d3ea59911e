"""The Discord channel (docs/discord.md)."""
