"""``POST /v1/chat/completions`` and ``GET /v1/models`` on the web server: the owner's assistant for a
configured client (docs/serve.md), streamed or not, as the ``openai`` client and Open WebUI's OpenAI
connection speak it.

A request is one turn of the agent in the client's own conversation (``api:<name>``; the owner's home chat
for a client configured with ``"owner": true``): the owner's policy and memory recall, the skills the
client's ``skills`` list names and no other; a call the policy marks ``ask`` is refused in a sentence the
model passes on (no one at the endpoint can confirm it), or with ``approve_in_chat`` asked in the owner's
chat. Only the request's last user message is taken: the conversation's history is the assistant's own,
kept as in every chat. A client that is not the owner gets no
facts taken from its turns, and its turns never enter the owner's chats' history or recall.

The bearer token is checked before anything is read (``ClientHandler``: 401, nothing runs); each request
counts against the client's per-minute bound (429), the body against the web server's size bound, the text
against ``MAX_TEXT_CHARS`` (413); turns run on their own small thread pool, never on the web server's loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import tornado.iostream

from assistant_framework.json_types import JsonObject
from assistant_framework.serve.clients import Client, PerMinute
from assistant_framework.serve.http import ClientHandler, Route
from assistant_framework.web.base import WebState
from assistant_framework.web.server import Mount
from messaging_llm_bot.agent.guard import ApprovalRequest, ApproveCallback
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.agent.turn import AgentEvent, TurnResult
from messaging_llm_bot.conversation.approvals import Answer

if TYPE_CHECKING:  # pragma: no cover - the agent loads with the runtime's parts
    from messaging_llm_bot.agent.loop import Agent

log = logging.getLogger(__name__)

#: The one model this endpoint serves: the assistant (its own runners are configured in ``llm``).
MODEL_ID = "assistant"
#: The longest message a request may bring (characters); the web server bounds the whole body too.
MAX_TEXT_CHARS = 64_000
#: Turns of served clients running at once; more wait for a thread (the agent orders one conversation's turns).
TURN_THREADS = 4
TOO_MANY = "too many requests this minute for this client (serve.per_minute)"


class BadRequest(ValueError):
    """A request this endpoint cannot answer; the message says why, in one sentence."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def message_text(content: object) -> str:
    """The text of a message's ``content``: a string, or the text parts of a list (images are not read here)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"]
        return "\n".join(part for part in parts if part)
    return ""


def turn_text(body: object) -> str:
    """The text of the request's last message, which must be the user's; BadRequest says what is wrong."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object with 'messages'")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user":
        raise BadRequest("the last message must be the user's (role 'user')")
    text = message_text(last.get("content")).strip()
    if not text:
        raise BadRequest("the last message has no text")
    if len(text) > MAX_TEXT_CHARS:
        raise BadRequest(f"the message is longer than {MAX_TEXT_CHARS} characters", 413)
    return text


@dataclass
class ChatService:
    """What the endpoint needs of the bot: its agent (built on first use), the conversation of a client and
    the per-minute bound it shares with the MCP server."""

    agent: Callable[[], Agent]
    conversation_of: Callable[[Client], str]
    owner_client: Callable[[Client], bool]
    per_minute: PerMinute
    #: How to ask the owner now for a client with ``approve_in_chat`` (None: no channel can ask: refused).
    owner_approver: Callable[[], ApproveCallback | None] = lambda: None
    threads: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(TURN_THREADS, thread_name_prefix="api-turn")
    )

    def incoming(self, client: Client, text: str, on_event: Callable[[AgentEvent], None] | None) -> AgentMessage:
        """The client's message as the agent takes it: its conversation, its skills and nothing to confirm."""
        owner = self.owner_client(client)
        conversation = self.conversation_of(client)
        return AgentMessage(
            conversation,
            text,
            # A reminder or job made in the client's turn goes to the owner's home chat (no chat of its own).
            chat_id=conversation if owner else None,
            user_id=f"api:{client.name}",
            owner_chat=True,
            approve=self.approver(client),
            on_event=on_event,
            stream=on_event is not None,
            skills=frozenset(client.settings.skills),
            extract_facts=owner,
        )

    def approver(self, client: Client) -> ApproveCallback | None:
        """Who confirms the client's ``ask`` calls: the owner in their chat with ``approve_in_chat`` (the
        question names the client), else no one (refused: no one at the endpoint can confirm)."""
        if not client.settings.approve_in_chat:
            return None
        ask_owner = self.owner_approver()
        if ask_owner is None:
            return None

        def approve(request: ApprovalRequest) -> Answer:
            reason = request.get("reason") or "the policy asks for confirmation"
            return ask_owner({**request, "reason": f"{reason}; asked for the served client {client.name!r}"})

        return approve

    async def run(self, incoming: AgentMessage) -> TurnResult:
        return await asyncio.get_running_loop().run_in_executor(self.threads, self._handle, incoming)

    def _handle(self, incoming: AgentMessage) -> TurnResult:
        return self.agent().handle(incoming)


def completion_id(result: TurnResult | None) -> str:
    return f"chatcmpl-{result.trace_id if result is not None and result.trace_id else int(time.time() * 1000)}"


class ModelsHandler(ClientHandler):
    """``GET /v1/models``: the assistant, the one model a client can ask."""

    def get(self) -> None:
        self.set_header("Content-Type", "application/json")
        model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "assistant-framework"}
        self.finish(json.dumps({"object": "list", "data": [model]}))


class CompletionsHandler(ClientHandler):
    """``POST /v1/chat/completions``: one turn of the assistant in the client's conversation."""

    def initialize(self, state: WebState, clients: tuple[Client, ...], service: ChatService, **_: object) -> None:  # type: ignore[override]
        super().initialize(state, clients)
        self.service = service

    async def post(self) -> None:
        try:
            body = json.loads(self.request.body or b"")
        except (ValueError, UnicodeDecodeError):
            self.refuse(400, "the body is not JSON")
            return
        try:
            text = turn_text(body)
        except BadRequest as exc:
            self.refuse(exc.status, str(exc))
            return
        if not self.service.per_minute.allow(self.client.name):
            self.set_header("Retry-After", "60")
            self.refuse(429, TOO_MANY)
            return
        log.info(
            "client %s asks in %s (%d chars)", self.client.name, self.service.conversation_of(self.client), len(text)
        )
        if body.get("stream") is True:
            await self._stream(text)
        else:
            await self._answer(text)

    async def _answer(self, text: str) -> None:
        result = await self.service.run(self.service.incoming(self.client, text, None))
        if not result.ok and not result.stopped:
            # The turn's own sentence (the model server is down, a storage failure) in the error shape.
            self.refuse(502, result.reply)
            return
        usage = {
            "prompt_tokens": result.usage.get("prompt_tokens", 0),
            "completion_tokens": result.usage.get("completion_tokens", 0),
            "total_tokens": result.usage.get("total_tokens", 0),
        }
        self.set_header("Content-Type", "application/json")
        self.finish(
            json.dumps(
                {
                    "id": completion_id(result),
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": MODEL_ID,
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": result.reply}, "finish_reason": "stop"}
                    ],
                    "usage": usage,
                }
            )
        )

    async def _stream(self, text: str) -> None:
        """Server-sent events: the reply as it grows, then the rest of the final reply, then ``[DONE]``."""
        loop = asyncio.get_running_loop()
        shown: asyncio.Queue[str] = asyncio.Queue()

        def on_event(event: AgentEvent) -> None:  # on the turn's thread
            if event.kind == "delta":
                loop.call_soon_threadsafe(shown.put_nowait, str(event.data.get("text", "")))

        turn = asyncio.ensure_future(self.service.run(self.service.incoming(self.client, text, on_event)))
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        created, chunk_id = int(time.time()), completion_id(None)
        sent = ""
        open_ = await self._event(chunk_id, created, {"role": "assistant", "content": ""})
        while open_ and not (turn.done() and shown.empty()):
            waiting = asyncio.ensure_future(shown.get())
            await asyncio.wait({waiting, turn}, return_when=asyncio.FIRST_COMPLETED)
            if not waiting.done():
                waiting.cancel()
                continue
            so_far = waiting.result()
            # A delta is the text shown so far; only what extends what was sent can go out (no unsaying).
            if so_far.startswith(sent) and len(so_far) > len(sent):
                open_ = await self._event(chunk_id, created, {"content": so_far[len(sent) :]})
                sent = so_far
        result = await turn  # a client that hung up does not stop the turn: its reply is kept in the history
        if not open_:
            return
        reply = result.reply
        rest = reply[len(sent) :] if reply.startswith(sent) else "\n\n" + reply
        if rest:
            open_ = await self._event(chunk_id, created, {"content": rest})
        if open_ and await self._event(chunk_id, created, {}, "stop"):
            await self._send("data: [DONE]\n\n")
        if not self._finished:
            self.finish()

    async def _event(self, chunk_id: str, created: int, delta: JsonObject, finish: str | None = None) -> bool:
        chunk = {
            "id": chunk_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": MODEL_ID,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return await self._send(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n")

    async def _send(self, text: str) -> bool:
        """Write and flush one event; False once the client has gone."""
        try:
            self.write(text)
            await self.flush()
            return True
        except tornado.iostream.StreamClosedError:
            return False


class ChatElsewhere(ClientHandler):
    """``/v1/...`` on ``assistant web`` alone: the chat endpoint is the bot's; say so after the token check."""

    def get(self) -> None:
        self.refuse(503, "the chat endpoint runs with the bot: set web.enabled and start the bot (docs/serve.md)")

    def post(self) -> None:
        self.get()


def chat_mount(clients: tuple[Client, ...], service: ChatService | None) -> Mount:
    """The ``/v1/`` routes for the web server; without a service (``assistant web`` alone) they say where to go."""

    def routes(state: WebState) -> list[Route]:
        shared: dict[str, object] = {"state": state, "clients": clients}
        if service is None:
            return [(r"/v1/(?:models|chat/completions)/?", ChatElsewhere, shared)]
        return [
            (r"/v1/models/?", ModelsHandler, shared),
            (r"/v1/chat/completions/?", CompletionsHandler, {**shared, "service": service}),
        ]

    return routes
