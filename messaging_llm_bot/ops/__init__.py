"""Operating the bot: ``assistant setup`` (first run) and ``assistant doctor`` (what is wrong, what to do)."""
