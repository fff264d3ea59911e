"""The terminal chat: chat.py (the main thread), service.py (its channel), extras.py (the prompt, line editing)."""
