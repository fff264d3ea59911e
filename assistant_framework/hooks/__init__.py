"""Outside events that start turns: the hooks listener (``POST /hooks/<name>``; docs/actions.md)."""
