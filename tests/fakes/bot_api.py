"""A fake Telegram Bot API server for end-to-end tests of python-telegram-bot code.

A stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a daemon thread (``tests.fakes._http``); https with
``tls=`` a server context (``tests.certs`` makes the certificates).
Point PTB at it::

    with FakeBotAPI() as fake:
        app = (ApplicationBuilder().token(fake.token)
               .base_url(fake.base_url).base_file_url(fake.base_file_url).build())
        ...  # async with app: await app.start(); await app.updater.start_polling(poll_interval=0, timeout=1)
        fake.send_message("hello")                 # the user writes to the bot (chat_id == user_id)
        fake.send_message("/start@testbot")        # bot_command entity added automatically
        msgs = fake.wait_for_messages(chat_id=1, n=1)
        assert msgs[0]["text"] == "hello"

Pushing updates (what a user does): ``send_message``, ``edit_message``, ``send_document``,
``send_photo``, ``send_voice``, ``callback_query``, ``push_update``. Each returns the update dict;
``forwarded_from=NAME`` (messages, documents, photos, voice notes) makes it a forward of NAME's message.
``redeliver(update)`` hands an already confirmed update out once more (a lost confirmation); the updates pushed
in a ``with together():`` block go out in one ``getUpdates`` answer.

Observing the bot: ``calls(method=None)`` lists ``{"method", "params", "status", "at"}`` in order
(``at``: wall-clock time when the call was answered; calls that made a message also carry its ``message_id``)
(multipart uploads appear in params as ``{"filename", "content", "size"}``);
``messages(chat_id)`` gives the bot's messages in a chat with their current text (edits applied,
deleted ones removed); ``wait_for(predicate)`` and ``wait_for_messages(chat_id, n)`` poll;
``commands()`` is the list from setMyCommands. ``add_file(content, path)`` registers bytes for getFile.

Faults: ``fail_next(method, status=429, ...)`` makes the next call(s) of a method fail
(429 carries ``parameters.retry_after``, PTB raises RetryAfter; 400 BadRequest; 403 Forbidden;
409 Conflict; 502 NetworkError); ``conflict_on_get_updates(True)`` simulates a second instance;
``faults_left(method, clear=False)`` counts (and drops) what is left of them;
``answer_next(method, payload, status, content_type, trickle)`` answers the next call of a method with raw
bytes (a page that is not JSON), or slowly (``trickle``: ``FakeHandler.deliver``); ``refuse_chat(chat_id)``
makes every call for one chat fail for good, as for a user who blocked the bot (403 ``Forbidden: bot was
blocked by the user``) or a chat that does not exist (``status=400``: ``Bad Request: chat not found``), until
``refuse_chat(chat_id, None)``.

Validation like the real server: text over 4096 UTF-16 units, empty text, MarkdownV2/HTML that does
not parse, entities out of range and edits that change nothing all get the real 400 descriptions.
Calls are POST with form, JSON or multipart bodies, or query strings; values are JSON-decoded the way
PTB encodes them. A wrong token gets 401 and unknown methods 404 ``{"ok": false}`` (both recorded).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.fakes._http import FakeServer
from tests.fakes.bot_api_markup import MarkupError, utf16_len

MAX_TEXT = 4096
MAX_CAPTION = 1024
_DEFAULT_DESCRIPTIONS = {
    400: "Bad Request: can't parse entities: injected fault",
    401: "Unauthorized",
    403: "Forbidden: bot was blocked by the user",
    404: "Not Found",
    409: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    429: "Too Many Requests: retry after 1",
    500: "Internal Server Error",
    502: "Bad Gateway",
}
_COMMAND_RE = re.compile(r"^/[A-Za-z0-9_]{1,32}(?:@\w{1,32})?")
_LONG_POLL_CAP = 0.5


class ApiError(Exception):
    """A Bot API error reply: HTTP status, description and optional ``parameters``."""

    def __init__(self, status: int, description: str, parameters: dict | None = None) -> None:
        super().__init__(description)
        self.status, self.description, self.parameters = status, description, parameters


def _bad(description: str) -> ApiError:
    return ApiError(400, f"Bad Request: {description}")


class FakeBotAPI:
    """In-process fake of api.telegram.org; see the module docstring for usage."""

    def __init__(
        self, token: str = "123456:TEST-token", bot_username: str = "testbot", tls: ssl.SSLContext | None = None
    ) -> None:
        self.token = token
        self.tls = tls  # a server context: serve https (base_url says so)
        self.bot_user = {
            "id": int(token.split(":")[0]) if token.split(":")[0].isdigit() else 123456,
            "is_bot": True,
            "first_name": "Test Bot",
            "username": bot_username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        lock = threading.RLock()
        self._cond = threading.Condition(lock)  # the long polls wait on it: an update or a stop wakes them
        # wait_for waits on this one (same lock): every call arriving or answered wakes it, not the long polls.
        self._watch = threading.Condition(lock)
        self._version = 0  # bumped by every change wait_for is woken for
        self._calls: list[dict] = []
        self._updates: list[dict] = []
        self._polls = 0  # getUpdates calls started so far
        self._arrived: dict[str, int] = {}  # lower-case method -> calls received so far, answered or not
        self._waiting = 0  # getUpdates calls waiting for an update right now
        #: Longest a getUpdates waits, whatever its ``timeout`` (keeps stopping a bot quick).
        self.long_poll_cap = _LONG_POLL_CAP
        self._again: dict[int, dict] = {}  # update_id -> {"after": poll count, "delivered": bool}
        self._update_ids = itertools.count(1)
        self._msg_ids: dict[int, itertools.count] = {}
        self._chats: dict[int, dict] = {}
        self._topics: dict[int, set[int]] = {}  # chat -> its forum topics (message_thread_id)
        self._closed_topics: dict[int, set[int]] = {}  # chat -> its topics closed (sends refused: TOPIC_CLOSED)
        self._history: dict[int, dict[int, dict]] = {}  # chat -> message_id -> message (user and bot)
        self._bot_msgs: dict[int, list[int]] = {}  # chat -> bot message ids, in send order
        self._deleted: set[tuple[int, int]] = set()
        self._files: dict[str, dict] = {}
        self._file_ids = itertools.count(1)
        self._faults: dict[str, list[dict]] = {}
        self._answers: dict[str, list[tuple[int, bytes, str, dict | None]]] = {}  # answer_next's, per method
        self._delays: dict[str, list[float | threading.Event]] = {}
        self._refused: dict[str, ApiError] = {}  # chat id -> the error every call for that chat gets
        self._conflict = False
        self._webhook_url = ""
        self._commands: list = []
        self._server: FakeServer | None = None
        self._stopping = False

    # ----- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "FakeBotAPI":
        """Start serving on 127.0.0.1 with a free port."""
        from tests.fakes.bot_api_http import BotApiHandler

        self._stopping = False
        self._server = FakeServer(BotApiHandler, self)
        self._server.tls = self.tls
        self._server.start("fake-bot-api")
        return self

    def stop(self) -> None:
        """Stop serving; wakes any pending long-poll."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> "FakeBotAPI":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeBotAPI is not started"
        return self._server.server_address[1]

    @property
    def _connections(self) -> set:
        """Open keep-alive connections (dropped by ``stop``)."""
        return self._server.connections if self._server is not None else set()

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/file/bot"

    # ----- what the user does ------------------------------------------------------------------
    def send_message(
        self,
        text: str,
        user_id: int = 1,
        chat_id: int | None = None,
        chat_type: str = "private",
        username: str = "owner",
        reply_to: int | None = None,
        entities: list[dict] | None = None,
        forwarded_from: str | None = None,
        topic: int | None = None,
    ) -> dict:
        """Push a text message from a user; commands get a ``bot_command`` entity. ``forwarded_from`` makes it
        a forward of a message by a user of that name (``forward_origin``, Bot API 7.0). ``topic`` sends it in
        that forum topic of the chat (``message_thread_id`` and ``is_topic_message``, as Telegram does in forum
        supergroups and in private chats with topics); the topic exists from then on."""
        msg = self._user_message(user_id, chat_id, chat_type, username, reply_to, forwarded_from, topic)
        msg["text"] = text
        ents = list(entities or [])
        m = _COMMAND_RE.match(text)
        if m and not any(e.get("type") == "bot_command" and e.get("offset") == 0 for e in ents):
            ents.insert(0, {"type": "bot_command", "offset": 0, "length": utf16_len(m.group(0))})
        if ents:
            msg["entities"] = ents
        return self._push("message", msg)

    def edit_message(self, chat_id: int, message_id: int, new_text: str) -> dict:
        """Push an ``edited_message`` update for a message the user sent earlier."""
        with self._cond:
            old = self._history.get(chat_id, {}).get(message_id)
            if old is None:
                raise KeyError(f"FakeBotAPI.edit_message: no message {message_id} in chat {chat_id}")
            old.update(text=new_text, edit_date=int(time.time()))
            old.pop("entities", None)
            msg = json.loads(json.dumps(old))
        m = _COMMAND_RE.match(new_text)
        if m:
            msg["entities"] = [{"type": "bot_command", "offset": 0, "length": utf16_len(m.group(0))}]
        return self._push("edited_message", msg)

    def send_document(
        self,
        user_id: int,
        file_name: str,
        content: bytes,
        caption: str | None = None,
        mime_type: str = "application/octet-stream",
        chat_id: int | None = None,
        chat_type: str = "private",
        forwarded_from: str | None = None,
        media_group_id: str | None = None,
    ) -> dict:
        """Push a document message; the file can be fetched with getFile + download."""
        msg = self._user_message(user_id, chat_id, chat_type, "owner", None, forwarded_from)
        ref = self.add_file(content, f"documents/{file_name}")
        msg["document"] = {**ref, "file_name": file_name, "mime_type": mime_type}
        if caption is not None:
            msg["caption"] = caption
        if media_group_id is not None:  # a part of an album: sent together, one update each
            msg["media_group_id"] = media_group_id
        return self._push("message", msg)

    def send_photo(
        self,
        user_id: int,
        content: bytes,
        caption: str | None = None,
        width: int = 1280,
        height: int = 960,
        chat_id: int | None = None,
        chat_type: str = "private",
        forwarded_from: str | None = None,
        media_group_id: str | None = None,
    ) -> dict:
        """Push a photo message: a thumbnail and the full size (largest last, as Telegram does)."""
        msg = self._user_message(user_id, chat_id, chat_type, "owner", None, forwarded_from)
        thumb = self.add_file(content[: max(1, len(content) // 4)], "photos/thumb.jpg")
        full = self.add_file(content, "photos/photo.jpg")
        msg["photo"] = [
            {**thumb, "width": max(1, width // 4), "height": max(1, height // 4)},
            {**full, "width": width, "height": height},
        ]
        if caption is not None:
            msg["caption"] = caption
        if media_group_id is not None:  # a part of an album: sent together, one update each
            msg["media_group_id"] = media_group_id
        return self._push("message", msg)

    def send_voice(
        self,
        user_id: int,
        content: bytes,
        duration: int = 2,
        chat_id: int | None = None,
        chat_type: str = "private",
        forwarded_from: str | None = None,
    ) -> dict:
        """Push a voice note (OGG/Opus)."""
        msg = self._user_message(user_id, chat_id, chat_type, "owner", None, forwarded_from)
        msg["voice"] = {**self.add_file(content, "voice/voice.oga"), "duration": duration, "mime_type": "audio/ogg"}
        return self._push("message", msg)

    def callback_query(self, user_id: int, data: str, message_id: int, chat_id: int | None = None) -> dict:
        """Push a ``callback_query`` as if the user pressed an inline button on a bot message."""
        chat = user_id if chat_id is None else chat_id
        with self._cond:
            message = self._history.get(chat, {}).get(message_id) or {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": self._chat(chat, "private", "owner"),
            }
            query = {
                "id": str(next(self._file_ids)),
                "from": self._user(user_id, "owner"),
                "chat_instance": str(chat),
                "data": data,
                "message": json.loads(json.dumps(message)),
            }
        return self._push("callback_query", query)

    def push_update(self, update: dict) -> dict:
        """Queue a raw update; ``update_id`` is assigned when missing."""
        with self._cond:
            update = dict(update)
            update.setdefault("update_id", next(self._update_ids))
            self._updates.append(update)
            self._cond.notify_all()
            return update

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """The updates pushed inside go out in one ``getUpdates`` answer, as Telegram often delivers an album's
        parts: a long poll woken meanwhile answers only once the block ends (it waits for the lock held here)."""
        with self._cond:
            yield

    def redeliver(self, update: dict) -> dict:
        """Deliver an update again, as Telegram does when the confirming offset never reached it.

        The copy is offered to the next getUpdates that starts from now on, whatever its offset
        (a long poll still open from before, e.g. of a stopped bot, neither sees nor drops it),
        and is dropped once a later call confirms past it.
        """
        with self._cond:
            update = json.loads(json.dumps(update))
            self._updates[:] = [u for u in self._updates if u["update_id"] != update["update_id"]]
            self._updates.append(update)
            self._updates.sort(key=lambda u: u["update_id"])
            self._again[update["update_id"]] = {"after": self._polls, "delivered": False}
            self._cond.notify_all()
            return update

    def redelivered(self, update_id: int) -> bool:
        """True once an update passed to ``redeliver`` was returned by a getUpdates call."""
        with self._cond:
            again = self._again.get(update_id)
            return again is not None and again["delivered"]

    def add_file(self, content: bytes, path: str) -> dict:
        """Register downloadable bytes; returns ``{file_id, file_unique_id, file_size}``."""
        with self._cond:
            n = next(self._file_ids)
            stem, dot, ext = path.rpartition(".")
            file_path = f"{stem}_{n}.{ext}" if dot else f"{path}_{n}"
            ref = {"file_id": f"FILE{n}", "file_unique_id": f"U{n}", "file_size": len(content)}
            self._files[ref["file_id"]] = {**ref, "file_path": file_path, "content": bytes(content)}
            return dict(ref)

    def file_content(self, file_path: str) -> bytes | None:
        """Bytes of a registered file by its ``file_path`` (what a download GET asks for)."""
        with self._cond:
            found = next((f for f in self._files.values() if f["file_path"] == file_path), None)
            return None if found is None else found["content"]

    # ----- what the bot did --------------------------------------------------------------------
    def calls(self, method: str | None = None) -> list[dict]:
        """All API calls in order as ``{"method", "params", "status", "at"}``; optionally one method only."""
        with self._cond:
            return [dict(c) for c in self._calls if method is None or c["method"] == method]

    def messages(self, chat_id: int) -> list[dict]:
        """The bot's live messages in ``chat_id`` (current text after edits, deleted ones left out)."""
        with self._cond:
            chat = self._history.get(chat_id, {})
            return [
                json.loads(json.dumps(chat[mid]))
                for mid in self._bot_msgs.get(chat_id, [])
                if (chat_id, mid) not in self._deleted
            ]

    def topic_messages(self, chat_id: int, topic: int | None) -> list[dict]:
        """The bot's live messages in one forum topic of ``chat_id`` (None: those outside any topic)."""
        return [m for m in self.messages(chat_id) if m.get("message_thread_id") == topic]

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 10) -> Any:
        """Wait until ``predicate`` returns something truthy and return that; TimeoutError otherwise.

        Checked again as soon as a call arrives or is answered (the bot's every move), and every 20 ms
        for what the fake does not see (a file the bot writes). Called without the fake's lock held."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                seen = self._version
            value = predicate()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining < 0:
                recent = [c["method"] for c in self.calls()][-10:]
                raise TimeoutError(f"FakeBotAPI.wait_for: condition not met within {timeout}s; last calls {recent}")
            with self._cond:
                if self._version == seen:
                    self._watch.wait(min(remaining, 0.02))

    def _changed(self) -> None:
        """Wake wait_for (called with the lock held)."""
        self._version += 1
        self._watch.notify_all()

    def wait_for_messages(self, chat_id: int, n: int, timeout: float = 10) -> list[dict]:
        """Wait until the bot has at least ``n`` live messages in ``chat_id``; returns them all."""
        return self.wait_for(lambda: (lambda m: m if len(m) >= n else None)(self.messages(chat_id)), timeout)

    def polls_started(self) -> int:
        """How many getUpdates calls have arrived so far (``calls`` records each one when it returns)."""
        with self._cond:
            return self._polls

    def arrived(self, method: str) -> int:
        """How many calls of ``method`` have arrived so far, answered or not (``calls`` has the answered)."""
        with self._cond:
            return self._arrived.get(method.lower(), 0)

    def waiting_polls(self) -> int:
        """How many getUpdates calls are waiting for an update at this moment."""
        with self._cond:
            return self._waiting

    def commands(self) -> list:
        """The command list last set with setMyCommands."""
        with self._cond:
            return list(self._commands)

    # ----- fault injection ---------------------------------------------------------------------
    def fail_next(
        self,
        method: str,
        status: int = 429,
        description: str | None = None,
        retry_after: float | None = 1,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` calls of ``method`` fail with ``status``.

        ``description`` defaults to the real server's wording for the status; ``retry_after``
        is only sent with 429 (PTB checks it before the status and would raise RetryAfter).
        """
        params = {"retry_after": retry_after} if status == 429 and retry_after is not None else None
        desc = description or (
            f"Too Many Requests: retry after {retry_after}"
            if status == 429
            else _DEFAULT_DESCRIPTIONS.get(status, f"Error {status}")
        )
        with self._cond:
            self._faults.setdefault(method.lower(), []).append(
                {"error": ApiError(status, desc, params), "times": times}
            )

    def faults_left(self, method: str, *, clear: bool = False) -> int:
        """How many failures ``fail_next`` left for ``method`` (``clear``: and drop them: its calls work again)."""
        with self._cond:
            queue = self._faults.get(method.lower(), [])
            left = sum(fault["times"] for fault in queue)
            if clear:
                self._faults.pop(method.lower(), None)
            return left

    def answer_next(
        self,
        method: str,
        payload: bytes,
        status: int = 200,
        content_type: str = "text/html",
        trickle: dict | None = None,
    ) -> None:
        """Answer the next call of ``method`` with ``payload`` as it is (a proxy's error page, a body that is not
        JSON), or slowly with a ``trickle`` spec (``FakeHandler.deliver``); the call is recorded with ``status``."""
        with self._cond:
            self._answers.setdefault(method.lower(), []).append((status, payload, content_type, trickle))

    def next_answer(self, method: str) -> tuple[int, bytes, str, dict | None] | None:
        """The answer ``answer_next`` set for this call of ``method`` (taken), or None."""
        with self._cond:
            answers = self._answers.get(method.lower())
            return answers.pop(0) if answers else None

    def delay_next(self, method: str, seconds: float, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` only after ``seconds`` (a slow network at that step)."""
        with self._cond:
            self._delays.setdefault(method.lower(), []).extend([seconds] * times)

    def hold_next(self, method: str) -> threading.Event:
        """Answer the next call of ``method`` only once the returned event is set (at most 60 s later): a slow
        network at that step, for as long as the test needs to act in it (``arrived`` says it is there)."""
        release = threading.Event()
        with self._cond:
            self._delays.setdefault(method.lower(), []).append(release)
        return release

    def refuse_chat(self, chat_id: int, status: int | None = 403, description: str | None = None) -> None:
        """Answer every later call naming ``chat_id`` with ``status`` (``None``: serve it again).

        ``description`` defaults to the real server's wording: 403 ``Forbidden: bot was blocked by the
        user``, 400 ``Bad Request: chat not found``.
        """
        with self._cond:
            if status is None:
                self._refused.pop(str(chat_id), None)
                return
            desc = (
                description
                or {400: "Bad Request: chat not found"}.get(status)
                or _DEFAULT_DESCRIPTIONS.get(status, f"Error {status}")
            )
            self._refused[str(chat_id)] = ApiError(status, desc)

    def close_topic(self, chat_id: int, topic: int) -> None:
        """Close a forum topic: a bot's send to it gets 400 ``TOPIC_CLOSED``, as a bot without the right to
        manage topics gets from Telegram."""
        with self._cond:
            self._closed_topics.setdefault(chat_id, set()).add(topic)

    def delete_topic(self, chat_id: int, topic: int) -> None:
        """Delete a forum topic: a send to it gets 400 ``message thread not found``."""
        with self._cond:
            self._topics.get(chat_id, set()).discard(topic)

    def conflict_on_get_updates(self, enabled: bool = True) -> None:
        """While enabled every getUpdates gets 409 Conflict, as with a second polling instance."""
        with self._cond:
            self._conflict = enabled
            self._cond.notify_all()

    # ----- internals ---------------------------------------------------------------------------
    def _user(self, user_id: int, username: str) -> dict:
        return {
            "id": user_id,
            "is_bot": False,
            "first_name": username.capitalize(),
            "username": username,
            "language_code": "en",
        }

    def _chat(self, chat_id: int, chat_type: str, username: str) -> dict:
        chat = self._chats.get(chat_id)
        if chat is None:
            chat = {"id": chat_id, "type": chat_type}
            if chat_type == "private":
                chat.update(first_name=username.capitalize(), username=username)
            else:
                chat["title"] = f"Test {chat_type} {chat_id}"
            self._chats[chat_id] = chat
        return dict(chat)

    def _next_message_id(self, chat_id: int) -> int:
        return next(self._msg_ids.setdefault(chat_id, itertools.count(1)))

    def _user_message(
        self,
        user_id: int,
        chat_id: int | None,
        chat_type: str,
        username: str,
        reply_to: int | None,
        forwarded_from: str | None = None,
        topic: int | None = None,
    ) -> dict:
        chat = user_id if chat_id is None else chat_id
        with self._cond:
            msg = {
                "message_id": self._next_message_id(chat),
                "date": int(time.time()),
                "chat": self._chat(chat, chat_type, username),
                "from": self._user(user_id, username),
            }
            if topic is not None:
                self._topics.setdefault(chat, set()).add(topic)
                if chat_type != "private":
                    self._chats[chat]["is_forum"] = True
                    msg["chat"]["is_forum"] = True
                msg.update(message_thread_id=topic, is_topic_message=True)
            if forwarded_from is not None:
                msg["forward_origin"] = {
                    "type": "user",
                    "date": msg["date"] - 3600,
                    "sender_user": {"id": 777000 + len(forwarded_from), "is_bot": False, "first_name": forwarded_from},
                }
            if reply_to is not None:
                original = self._history.get(chat, {}).get(reply_to)
                msg["reply_to_message"] = (
                    json.loads(json.dumps(original))
                    if original
                    else {"message_id": reply_to, "date": msg["date"], "chat": msg["chat"]}
                )
            return msg

    def _push(self, kind: str, msg: dict) -> dict:
        if "message_id" in msg and kind in ("message", "edited_message"):
            with self._cond:
                self._history.setdefault(msg["chat"]["id"], {})[msg["message_id"]] = json.loads(json.dumps(msg))
        return self.push_update({kind: msg})

    def _record(self, method: str, params: dict, status: int, message_id: int | None = None) -> None:
        with self._cond:
            call = {"method": method, "params": params, "status": status, "at": time.time()}
            if message_id is not None:
                call["message_id"] = message_id
            self._calls.append(call)
            self._changed()

    def handle(self, method: str, params: dict) -> tuple[int, dict]:
        """Run one API call and return (HTTP status, JSON reply); also records it."""
        from tests.fakes.bot_api_methods import METHODS  # the method table lives next door

        name, impl = METHODS.get(method.lower(), (method, None))
        made = None
        with self._cond:
            self._arrived[method.lower()] = self._arrived.get(method.lower(), 0) + 1
            self._changed()
            delays = self._delays.get(method.lower())
            delay = delays.pop(0) if delays else 0.0
        if isinstance(delay, threading.Event):
            delay.wait(60)
        elif delay:
            time.sleep(delay)
        try:
            with self._cond:
                queue = self._faults.get(method.lower())
                if queue:
                    fault = queue[0]
                    fault["times"] -= 1
                    if fault["times"] <= 0:
                        queue.pop(0)
                    raise fault["error"]
                refused = self._refused.get(str(params.get("chat_id")))
                if refused is not None:
                    raise refused
            if impl is None:
                raise ApiError(404, "Not Found")
            result = impl(self, params)
            status, reply = 200, {"ok": True, "result": result}
            made = result.get("message_id") if isinstance(result, dict) else None
        except ApiError as err:
            status = err.status
            reply = {"ok": False, "error_code": err.status, "description": err.description}
            if err.parameters:
                reply["parameters"] = err.parameters
        except MarkupError as err:
            status, reply = (
                400,
                {"ok": False, "error_code": 400, "description": f"Bad Request: can't parse entities: {err}"},
            )
        self._record(name, params, status, made)
        return status, reply
