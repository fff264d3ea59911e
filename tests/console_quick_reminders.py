"""``python -m tests.console_quick_reminders ARGS``: ``python -m messaging_llm_bot ARGS`` (``assistant run``) with the
terminal chat reading the reminder store every ``tests/waiting.py`` ``REMINDER_POLL_SECONDS`` instead of its 5 s
(channels/console/service.py), as the harnesses' in-process channels are given it: a test of a reminder set while
the chat runs on a real terminal waits for the reminder, not for the terminal's poll. The poll's own interval is
tested in-process (tests/test_console_tty.py)."""

from messaging_llm_bot.channels.console import service
from messaging_llm_bot.cli.run import run_and_exit
from tests.waiting import REMINDER_POLL_SECONDS

if __name__ == "__main__":
    service.REMINDER_POLL_SECONDS = REMINDER_POLL_SECONDS
    run_and_exit()
