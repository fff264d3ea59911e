"""Mutations of the console channel (messaging_llm_bot/channels/console/)."""

from __future__ import annotations

from mutation_list.common import BOT, KIT_CONSOLE_WEBCHAT, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "busy-console-never-reads-meanwhile",
        f"{BOT}/channels/console/extras.py",
        "            return bool(self.interactive and select.select([self.stdin.fileno()], [], [], 0)[0])",
        "            return False",
        "busy modes do nothing in the terminal chat not on a terminal of its own: a line typed while it answers "
        "waits its turn",
        KIT_CONSOLE_WEBCHAT,
    ),
    Mutation(
        "console-reminder-poll-like-the-others",
        f"{BOT}/channels/console/service.py",
        "REMINDER_POLL_SECONDS = 5.0",
        "REMINDER_POLL_SECONDS = 30.0",
        "a reminder set outside the running terminal chat (the web page, the CLI) waits up to 30 s, as on the "
        "other channels, instead of about 5 s for the one person at the prompt",
        ("test_console_tty.py",),
    ),
    Mutation(
        "console-stop-typed-waits-its-turn",
        f"{BOT}/channels/console/chat.py",
        '        elif not _done(pending) and text.lower() == "/stop":',
        "        elif False:",
        "/stop typed while the terminal chat answers waits behind that answer instead of stopping it",
        KIT_CONSOLE_WEBCHAT,
    ),
    Mutation(
        "console-question-answer-sent-as-a-message",
        f"{BOT}/channels/console/chat.py",
        "        if service.asked.is_set() and service.answer_question(text) and line:",
        "        if False:",
        "the owner's y typed at the prompt under a question is a message for the model: the question is never "
        "answered (a served client's call waits, then is declined)",
        ("test_console_approve.py", *KIT_CONSOLE_WEBCHAT),
    ),
    Mutation(
        "console-ctrl-d-an-empty-line",
        f"{BOT}/channels/console/extras.py",
        "                self.raw.close()",
        '                return "\\n"',
        "a Ctrl-D at the prompt is an empty line: the chat does not end",
        ("test_console_typeahead.py", "test_console_gap.py"),
    ),
    Mutation(
        "console-history-not-private",
        f"{BOT}/channels/console/extras.py",
        "        private_file(path)  # 0600 before a line is written to it",
        "        pass",
        "the line history (what the owner typed) is made with the umask's mode, readable by other users",
        ("test_console_tty.py",),
    ),
    Mutation(
        "console-cooked-between-prompts",
        f"{BOT}/channels/console/extras.py",
        "        raw.enter_context(session.input.raw_mode())",
        "        pass",
        "the terminal is in cooked mode between prompts: a Ctrl-D typed then becomes a NUL once the next prompt "
        "reads, and is lost",
        ("test_console_gap.py", "test_console_typeahead.py"),
    ),
    Mutation(
        "console-cooked-while-printing",
        f"{BOT}/channels/console/extras.py",
        "        return contextlib.nullcontext()",
        "        return super().cooked_mode()",
        "the terminal is put in cooked mode while another thread's text is printed above the prompt: a Ctrl-D "
        "typed then becomes a NUL once raw mode is back, and is lost",
        ("test_console_gap.py",),
    ),
    Mutation(
        "console-ctrl-c-drops-the-line-typed",
        f"{BOT}/channels/console/extras.py",
        "                self._begun = self.session.default_buffer.text",
        "                pass",
        "keys typed while an answer is written are lost at the Ctrl-C that stops it",
        ("test_console_typeahead.py",),
    ),
    Mutation(
        "console-paste-waits-for-enter",
        f"{BOT}/channels/console/extras.py",
        '    if text.endswith("\\n"):',
        "    if False:",
        "a bracketed paste of whole lines waits in the prompt for one more Enter, and is then one message",
        ("test_console_typeahead.py",),
    ),
    Mutation(
        "console-line-begun-not-shown",
        f"{BOT}/channels/console/extras.py",
        "        if not self.begun or self.app.is_done:",
        "        if True:",
        "the answer's line not ended yet is not shown while it streams: the answer appears a line at a time",
        ("test_console_tty.py",),
    ),
    Mutation(
        "streamed-line-not-wrapped",
        f"{BOT}/channels/console/extras.py",
        'return f"{in_rows(self.begun, self.app.output.get_size().columns)}\\n{PROMPT}"',
        'return f"{self.begun}\\n{PROMPT}"',
        "a streamed answer stands still at the terminal's right edge until its line ends",
        ("test_first_day.py",),
    ),
    Mutation(
        "ctrl-c-leaves-the-prompt",
        f"{BOT}/channels/console/extras.py",
        "        event.app.erase_when_done = self._busy",
        "        event.app.erase_when_done = False",
        "a Ctrl-C that stops an answer leaves an empty 'you>' line above '… stopping'",
        ("test_second_day.py",),
    ),
    Mutation(
        "ctrl-c-at-the-prompt-leaves",
        f"{BOT}/channels/console/chat.py",
        "(idle and (armed or not service.term.interactive))",
        "idle",
        "a Ctrl-C just after an answer ended leaves the chat at once",
        ("test_second_day.py",),
    ),
)
