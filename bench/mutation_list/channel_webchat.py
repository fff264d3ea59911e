"""Mutations of the webchat channel (messaging_llm_bot/channels/webchat/)."""

from __future__ import annotations

from mutation_list.common import BOT, KIT_CONSOLE_WEBCHAT, WEBCHAT, WEBCHAT_JOBS, Mutation

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "webchat-page-public",
        f"{BOT}/channels/webchat/page.py",
        "    public = False  # every route needs the sign-in: base.py's prepare answers 401 before anything runs",
        "    public = True",
        "the Chat page, its history, its stream and its send are open without the sign-in",
        WEBCHAT,
    ),
    Mutation(
        "webchat-message-taken-twice",
        f"{BOT}/channels/webchat/service.py",
        "        if item is None:",
        "        if False:",
        "a message the browser sends again (the same id) is shown twice",
        WEBCHAT,
    ),
    Mutation(
        "webchat-store-open-to-all",
        f"{BOT}/channels/webchat/transcript.py",
        "            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)",
        "            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)",
        "the web chat's message store (the owner's words) is readable by others under umask 022",
        WEBCHAT_JOBS,
    ),
    Mutation(
        "webchat-text-unbounded",
        f"{BOT}/channels/webchat/page.py",
        "        if len(text) > MAX_TEXT_CHARS:",
        "        if False:",
        "a message of any length (up to the body's bound) is stored and sent to the model",
        WEBCHAT,
    ),
    Mutation(
        "webchat-any-message-id",
        f"{BOT}/channels/webchat/page.py",
        "    if not isinstance(client_id, str) or not (8 <= len(client_id) <= MAX_CLIENT_ID and client_id.isalnum()):",
        "    if not isinstance(client_id, str):",
        "a page's message id of any length and characters becomes part of the inbox's source id",
        WEBCHAT,
    ),
    Mutation(
        "webchat-stop-waits-its-turn",
        f"{BOT}/channels/webchat/service.py",
        '        if text.strip().lower() == "/stop":  # at once, not behind the turn it stops',
        "        if False:  # at once, not behind the turn it stops",
        "/stop on the web chat waits behind the answer it should stop, then finds nothing to stop",
        KIT_CONSOLE_WEBCHAT,
    ),
    Mutation(
        "webchat-once-map-unbounded",
        f"{BOT}/channels/webchat/transcript.py",
        "            if len(self._parts) > KEYS_KEPT:",
        "            if False:",
        "the web chat's map of reply parts written grows by every part for the life of the process",
        ("test_webchat_transcript.py",),
    ),
    Mutation(
        "webchat-start-reads-whole-store",
        f"{BOT}/channels/webchat/transcript.py",
        "        for line in tail_bytes(self.path, KEYS_KEPT).splitlines():",
        '        for line in (self.path.read_bytes() if self.path.exists() else b"").splitlines():',
        "the web chat's start reads its whole message store (10 MB after a year) and keeps every key",
        ("test_webchat_transcript.py",),
    ),
    Mutation(
        "webchat-upload-name-as-is",
        f"{BOT}/channels/webchat/service.py",
        "            name = sanitize_name(upload.name)",
        "            name = upload.name",
        "an uploaded file's name is shown with its direction characters",
        WEBCHAT,
    ),
    Mutation(
        "webchat-direction-controls-live",
        f"{BOT}/channels/webchat/static/chat.js",
        "item.textContent = marked(message.text);",
        "item.textContent = message.text;",
        "a right-to-left override in a message or an answer reorders it on the Chat page",
        WEBCHAT,
    ),
    Mutation(
        "webchat-text-as-html",
        f"{BOT}/channels/webchat/static/chat.js",
        "    item.textContent = marked(message.text);",
        "    item.innerHTML = marked(message.text);",
        "the Chat page writes a message (a caption the model wrote) as HTML",
        WEBCHAT,
    ),
)
