"""Signal frontend through the signal-cli daemon in HTTP mode (docs/signal.md)."""
