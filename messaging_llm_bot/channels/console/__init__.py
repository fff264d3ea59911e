"""The terminal chat: chat.py (the main thread: prompt, Ctrl-C), service.py (the channel), extras.py (the screen)."""
