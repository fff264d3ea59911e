"""The Chat page on the web server (``/chat``): its HTML, script and style, the history, the owner's messages
and answers to questions, and the event stream (server-sent events) the answer streams in by.

Every route is the web page's own handler (assistant_framework/web/base.py): 401 without the sign-in, a
POST without the session's form token 403, the server's bounds on bodies and connections. The page is the
only one with a script: its Content-Security-Policy allows this server's script and connections, nothing else.
"""

from __future__ import annotations

import asyncio
import json
import mimetypes
from pathlib import Path
from typing import ClassVar

import tornado.iostream
import tornado.web
from tornado.escape import xhtml_escape

from assistant_framework.web.base import CSP, BaseHandler, WebState
from assistant_framework.web.server import Mount
from messaging_llm_bot.channels.webchat.hub import Event
from messaging_llm_bot.channels.webchat.service import (
    MAX_TEXT_CHARS,
    PICTURE_TYPES,
    Upload,
    WebChatService,
    running,
)

HERE = Path(__file__).resolve().parent
#: The page's own policy: the base one, plus this server's script and event stream.
CHAT_CSP = CSP.replace("default-src 'none';", "default-src 'none'; script-src 'self'; connect-src 'self';")
#: A page's id for its message (the inbox takes it once: a message the page sends again is not answered twice).
MAX_CLIENT_ID = 64
#: A comment line on an idle stream, so a proxy or the browser does not drop it (seconds).
KEEPALIVE_SECONDS = 20.0
OFF = "the Chat page runs with the bot: set web.enabled and web.chat, and start the bot (docs/web.md#chat)"


class ChatHandler(BaseHandler):
    """The chat's routes: the page's own handler (sign-in, form tokens, redaction) with the chat's policy."""

    public = False  # every route needs the sign-in: base.py's prepare answers 401 before anything runs

    def initialize(self, state: WebState, api: bool = False, runtime: object = None) -> None:
        super().initialize(state, api)
        self.runtime = runtime

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("Content-Security-Policy", CHAT_CSP)

    def service(self) -> WebChatService:
        found = running(self.runtime)
        if found is None:
            raise tornado.web.HTTPError(503, OFF)
        return found


class PageHandler(ChatHandler):
    """``GET /chat``: the page; the script fills it from the history and the stream."""

    def get(self) -> None:
        html = (HERE / "static" / "chat.html").read_text(encoding="utf-8")
        token = xhtml_escape(self.xsrf_token.decode("ascii"))
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.finish(html.replace("{{csrf}}", token))


class AssetHandler(ChatHandler):
    """``GET /chat/chat.js`` and ``/chat/chat.css``: the page's script and style (signed in only)."""

    TYPES: ClassVar[dict[str, str]] = {"js": "text/javascript; charset=UTF-8", "css": "text/css; charset=UTF-8"}

    def get(self, ext: str) -> None:
        self.set_header("Content-Type", self.TYPES[ext])
        self.finish((HERE / "static" / f"chat.{ext}").read_bytes())


class HistoryHandler(ChatHandler):
    """``GET /chat/history``: the messages, the open questions and the answer being written."""

    def get(self) -> None:
        chat = self.service()
        asking = [{"id": key, "text": text} for key, text in list(chat.asking.items())]
        self.send_json({"messages": chat.transcript.recent(), "asking": asking, "live": chat.live})


class SendHandler(ChatHandler):
    """``POST /chat/send`` ``{"id", "text"}``: the owner's message, stored before it is answered 202."""

    async def post(self) -> None:
        body = self.json_body()
        text, client_id = body.get("text"), body.get("id")
        if not isinstance(text, str) or not text.strip():
            raise tornado.web.HTTPError(400, "the message has no text")
        if len(text) > MAX_TEXT_CHARS:
            raise tornado.web.HTTPError(413, f"the message is longer than {MAX_TEXT_CHARS} characters")
        try:
            message = await self.service().take(checked_id(client_id), text)
        except RuntimeError as exc:
            raise tornado.web.HTTPError(503, str(exc)) from None
        self.send_json({"message": message}, 202)


def checked_id(client_id: object) -> str:
    """The page's id of its message (the inbox's source id): 8 to 64 letters and digits, else 400."""
    if not isinstance(client_id, str) or not (8 <= len(client_id) <= MAX_CLIENT_ID and client_id.isalnum()):
        raise tornado.web.HTTPError(400, "the message needs an id of 8 to 64 letters and digits")
    return client_id


class UploadHandler(ChatHandler):
    """``POST /chat/upload?id=...&name=...&text=...``: a picture or file (the body, within the server's bound
    ``web.max_body_bytes``) with its caption, stored like a message before it is answered 202."""

    async def post(self) -> None:
        client_id = checked_id(self.get_query_argument("id", None))
        name = self.get_query_argument("name", "") or "file"
        text = self.get_query_argument("text", "")
        # The caption has the same bound as a message; written the other way round so the mutation of that bound
        # (webchat-text-unbounded) finds one line.
        if MAX_TEXT_CHARS < len(text):  # noqa: SIM300
            raise tornado.web.HTTPError(413, f"the caption is longer than {MAX_TEXT_CHARS} characters")
        if not self.request.body:
            raise tornado.web.HTTPError(400, "the file is empty")
        mime = self.request.headers.get("Content-Type", "application/octet-stream").split(";")[0].strip().lower()
        upload = Upload(name=name[:255], mime=mime[:100], data=self.request.body)
        try:
            message = await self.service().take(client_id, text, upload)
        except RuntimeError as exc:
            raise tornado.web.HTTPError(503, str(exc)) from None
        self.send_json({"message": message}, 202)


class ChatFileHandler(ChatHandler):
    """``GET /chat/file/<message id>``: the file a shown message carries (no other path can be asked for);
    a picture inline, anything else as a download."""

    async def get(self, message_id: str) -> None:
        chat = self.service()
        ref = chat.transcript.file_of(int(message_id))
        if ref is None:
            raise tornado.web.HTTPError(404, "no message with a file by that id")
        workspace = chat.runtime.workspace
        data = await self.off_loop("files", lambda: workspace.path(ref["rel"]).read_bytes())
        mime = ref["mime"] or mimetypes.guess_type(ref["name"])[0] or "application/octet-stream"
        if mime in PICTURE_TYPES:
            self.set_header("Content-Type", mime)
        else:
            self.set_header("Content-Type", "application/octet-stream")
            safe = "".join(ch for ch in ref["name"] if ch.isalnum() or ch in "._- ")[:100] or "file"
            self.set_header("Content-Disposition", f'attachment; filename="{safe}"')
        self.finish(data)


class AnswerHandler(ChatHandler):
    """``POST /chat/answer`` ``{"id", "yes"}``: the owner's button on a question; 409 when it is closed."""

    async def post(self) -> None:
        body = self.json_body()
        key, yes = body.get("id"), body.get("yes")
        if not isinstance(key, str) or not isinstance(yes, bool):
            raise tornado.web.HTTPError(400, "an answer is an id and yes: true or false")
        if not await self.service().answer(key, yes):
            raise tornado.web.HTTPError(409, "that question is no longer open")
        self.send_json({"answered": True})


class ChatEventsHandler(ChatHandler):
    """``GET /chat/events``: server-sent events (``message``, ``live``, ``typing``, ``ask``, ``asked``)."""

    async def get(self) -> None:
        chat = self.service()
        queue = self.queue = chat.hub.listen()
        if queue is None:
            raise tornado.web.HTTPError(503, "too many pages are listening to the chat")
        self.set_header("Content-Type", "text/event-stream")
        try:
            await self._send(": open\n\n")
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    await self._send(": keepalive\n\n")
                    continue
                if event is None:
                    break
                await self._send(f"data: {self.redact_json(event)}\n\n")
        except tornado.iostream.StreamClosedError:
            pass
        finally:
            chat.hub.leave(queue)
        if not self._finished:
            self.finish()

    def redact_json(self, event: Event) -> str:
        return self.redact(json.dumps(event, ensure_ascii=False))

    async def _send(self, text: str) -> None:
        self.write(text)
        await self.flush()

    def on_connection_close(self) -> None:
        # The page went away: end the loop now, not at its next write (its slot among the listeners is freed).
        queue = getattr(self, "queue", None)
        if queue is not None:
            queue.put_nowait(None) if not queue.full() else None


def chat_mount(runtime: object) -> Mount:
    """The Chat page's routes on the bot's web server (messaging_llm_bot/serve/mounts.py mounts them)."""

    def routes(state: WebState) -> list[tuple[str, type[tornado.web.RequestHandler], dict[str, object]]]:
        shared: dict[str, object] = {"state": state, "runtime": runtime}
        return [
            (r"/chat/?", PageHandler, shared),
            (r"/chat/chat\.(js|css)", AssetHandler, shared),
            (r"/chat/history", HistoryHandler, {**shared, "api": True}),
            (r"/chat/send", SendHandler, {**shared, "api": True}),
            (r"/chat/answer", AnswerHandler, {**shared, "api": True}),
            (r"/chat/upload", UploadHandler, {**shared, "api": True}),
            (r"/chat/file/(\d{1,12})", ChatFileHandler, shared),
            (r"/chat/events", ChatEventsHandler, {**shared, "api": True}),
        ]

    return routes
