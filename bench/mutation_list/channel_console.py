"""Mutations of the console channel (messaging_llm_bot/channels/console/)."""

from __future__ import annotations

from mutation_list.common import BOT, KIT_CONSOLE_WEBCHAT, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "busy-console-never-reads-meanwhile",
        f"{BOT}/channels/console/chat.py",
        "            elif not ended and keyboard.ready():",
        "            elif False:",
        "busy modes do nothing in the terminal chat: a line typed while it answers waits its turn",
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
        "console-prompt-ahead-of-the-read",
        f"{BOT}/channels/console/extras.py",
        "            self._prompting = True",
        "            self._prompting = self._at_prompt = True",
        "a notice coming between the chat's decision to prompt and readline's read is printed with a prompt of "
        "its own while the terminal is still in cooked mode: a Ctrl-D typed at it is lost, a line begun there is "
        "shown twice",
        ("test_console_gap.py",),
    ),
    Mutation(
        "console-ctrl-d-before-readline-lost",
        f"{BOT}/channels/console/extras.py",
        "    if keyboard.ready():",
        "    if False:",
        "a Ctrl-D typed before readline reads is left to readline, whose switch to raw mode makes a NUL of it: the "
        "chat does not end",
        ("test_console_gap.py",),
    ),
    Mutation(
        "console-prompt-printed-from-any-thread",
        f"{BOT}/channels/console/extras.py",
        "            if self.wake is None and self._at_prompt and not self._typing():",
        "            if self._at_prompt and not self._typing():",
        "a reminder or job reply at readline's prompt is printed by the thread showing it, racing readline's "
        "handling of a key: the key taken but shown before the text is wiped from view",
        ("test_console_tty.py",),
    ),
    Mutation(
        "console-main-thread-never-woken",
        f"{BOT}/channels/console/chat.py",
        "    return lambda: signal.pthread_kill(main, signum)",
        "    return lambda: None",
        "a reminder due while the owner sits at readline's prompt waits until the next line is sent",
        ("test_console_tty.py",),
    ),
    Mutation(
        "console-question-shown-read-from-its-event",
        f"{BOT}/channels/console/extras.py",
        "        return waiting.shown",
        "        return waiting.printed.is_set()",
        "a question answered at once after it is printed counts as not asked: the owner's yes is declined",
        ("test_console_tty.py", "test_console_approve.py"),
    ),
    Mutation(
        "console-stop-typed-waits-its-turn",
        f"{BOT}/channels/console/chat.py",
        '    if text.lower() == "/stop":',
        "    if False:",
        "/stop typed while the terminal chat answers waits behind that answer instead of stopping it",
        KIT_CONSOLE_WEBCHAT,
    ),
    Mutation(
        "console-raw-enter-not-a-line",
        f"{BOT}/channels/console/extras.py",
        '        text = self._decoder.decode(data, final=not data).replace("\\r\\n", "\\n").replace("\\r", "\\n")',
        "        text = self._decoder.decode(data, final=not data)",
        "lines pasted or typed quickly at readline's prompt, left in the terminal with raw mode's Enter (a CR), are "
        "one line never ended: only the first is answered, the rest wait for a further Enter",
        ("test_console_typeahead.py",),
    ),
    Mutation(
        "console-keys-begun-dropped",
        f"{BOT}/channels/console/extras.py",
        "        readline.set_startup_hook(lambda: readline.insert_text(begun))",
        "        pass",
        "keys typed right after Enter, before readline gave the terminal back, are taken and lost instead of "
        "starting the next prompt's line",
        ("test_console_typeahead.py",),
    ),
    Mutation(
        "console-ctrl-d-typed-ahead-a-key",
        f"{BOT}/channels/console/extras.py",
        "        if end is not None:",
        "        if False:",
        "a Ctrl-D typed with lines at readline's prompt, left in the terminal as a key, starts the next line "
        "instead of ending the chat",
        ("test_console_typeahead.py",),
    ),
    Mutation(
        "console-pasted-lines-not-shown",
        f"{BOT}/channels/console/extras.py",
        "        if echo is not None and taken:  # keys begun are shown by readline at the next prompt",
        "        if False:",
        "the lines pasted after the first at readline's prompt are answered but never shown: the owner sees "
        "answers to questions not on the screen",
        ("test_console_typeahead.py",),
    ),
)
