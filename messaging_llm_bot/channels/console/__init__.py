"""The terminal chat: chat.py (the loop), extras.py (the screen, notices), jobs.py (its scheduled jobs)."""
