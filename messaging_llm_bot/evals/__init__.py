"""Checks that drive the real agent with a model: eval cases (``runner``) and recorded prompts
re-sent to the current model (``replay``). Loaded by the CLI on use only."""
