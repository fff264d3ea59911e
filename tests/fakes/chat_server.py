"""Fake OpenAI-compatible model server for tests: real HTTP on 127.0.0.1, stdlib only.

Shared by every test that needs a model (client, agent loop, Telegram end-to-end, memory,
eval, benchmarks). Usage::

    with FakeChatServer() as server:                     # or server.start() / server.stop()
        server.enqueue("Hello!")                         # next chat answer's content
        server.enqueue({"content": "x", "reasoning": "because", "delay": 0.2})
        server.enqueue({"status": 429, "headers": {"Retry-After": "0"}})
        client = LLMClient.from_section({"runners": [{"name": "fake", "base_url": server.base_url,
                                         "model": "fake-model"}]})
        ...
        assert server.chat_requests[0]["messages"][-1]["content"] == "hi"

Endpoints (under `base_url` == "http://127.0.0.1:PORT/v1"):
- `POST /v1/chat/completions`: plain JSON, or server-sent events when the body says
  `stream: true` (a `:` comment line first, a role chunk, optional reasoning chunk, one
  chunk per content piece, a finish chunk, a usage chunk with `choices: []` if
  `stream_options.include_usage`, then `data: [DONE]`; chunked transfer encoding).
- `POST /v1/embeddings`: deterministic bag-of-words hash vectors (`hash_embedding`), so
  texts sharing words have a higher cosine similarity; override with
  `set_embeddings_handler(fn(texts) -> list[vector] | reply-dict)`.
- `POST /v1/audio/transcriptions` (multipart): `{"text": ...}` from `set_transcription`
  (plain text when `response_format=text`); the recorded request holds the form fields
  plus `file_name`, `file_size`, `file_content_type`.
- `POST /v1/audio/speech` (JSON `{"model", "input", "voice", "response_format"}`): real audio of a tone,
  0.05 s per input character (0.3-3 s), in the format asked for (`opus`: OGG/Opus, `mp3`, `wav`, `flac`;
  the default `mp3`, as OpenAI), with OpenAI's Content-Type (`audio/opus`...); an unknown format or an
  empty `input` gets HTTP 400 with an OpenAI-style error. `set_speech(...)` changes it: a reply dict with
  `status`/`raw` (an error, garbage), or `{"format": "wav"}` to answer in that format whatever was asked
  (a server without Opus, like some Piper front ends).
- `GET /v1/models`: the `models` given to the constructor.

Which chat answer is sent: the FIFO queue of `enqueue(...)` first, then `set_handler(fn)`
where `fn(request_json) -> reply | None`, then the default `DEFAULT_REPLY` content
('{"reply": "ok"}', a valid reply of the JSON skill protocol).

A reply is a str (the assistant content) or a dict with optional keys:
- `content` (str), `reasoning` (str) sent in `reasoning_field` (default
  "reasoning_content"; use "reasoning" for the Ollama/vLLM shape), `finish_reason`;
- `usage`: the usage object verbatim (None: no usage at all); default is a basic
  `prompt_tokens`/`completion_tokens`/`total_tokens` estimate (chars / 4);
- `timings`: llama.cpp-style timings object added to the body;
- `delay`: seconds to wait before answering (added to the server `latency`);
- `stream_chunks`: the content pieces of a streamed answer (default: content split into
  words); `chunk_delay`: seconds between streamed chunks; `chunk_gate`: a callable given each
  chunk's index before it is sent (the test's own process: it may block, holding the stream until
  the test saw what the chunks so far should have shown); `stream_error`: an error object
  sent as a `data: {"error": ...}` event after the chunks (then the stream just ends);
  `stream_cut: True`: after the chunks the connection is dropped in the middle of the body (a
  server process that dies mid-answer: llama-server crashing, Ollama's runner killed for memory);
  `keepalive_every` + `keepalive_for`: after the chunks, a `: keep-alive` comment every
  `keepalive_every` seconds for `keepalive_for` seconds before finishing (a trickling server);
- `status` (HTTP status), `body` (dict -> JSON, str/bytes verbatim; default an OpenAI-style
  error body), `headers` (extra response headers): an error or custom answer;
- `raw`: the whole response body verbatim (dict/list -> JSON, str/bytes as is, e.g.
  garbage), with `status` (default 200) and `content_type` (default application/json).

`requests` lists every request received (all endpoints) as `RecordedRequest`: a dict of
the JSON body (or form fields) with `.method`, `.path`, `.headers` (case-insensitive),
`.body` (raw bytes) and `.client` (the client's (host, port)). `chat_requests` filters chat
completions. Pass `api_key=` to make the server answer 401 unless `Authorization: Bearer <api_key>`
is sent.

A reply dict may also carry `tool_calls`: a list of `{"id", "name", "arguments"}` (arguments a
JSON string or an object) sent as the message's native `tool_calls` (finish_reason
"tool_calls"); streamed, each call's arguments arrive in two deltas after its id and name.
`tool_index` sets the streamed deltas' `index`: "position" (default, OpenAI), "zero" (every call
labelled 0, each starting with its own id: Ollama, vercel/ai#14277) or "none" (no `index` at all:
Gemini's OpenAI-compatible endpoint, openai/openai-python#2806); `tool_name_each_delta: True`
repeats the whole name in every arguments delta (MiniMax M2.7 on NVIDIA NIM, hermes-agent#8259).
`trickle`: `{"every": s, "for": s, "where": "body" | "head", "framing": "chunked" | "close"}` sends
an answer that is not streamed slowly, as some hosted APIs do: `where="body"` (default) sends the
headers, then one whitespace keep-alive (`b" \n"`) every `every` seconds for `for` seconds, then
the JSON; `framing="close"` leaves out the length and the chunking and ends the body by closing
the connection; `where="head"` sends the status line, then an `X-Wait` header line one byte
every `every` seconds, then the rest. It works on chat answers (in the reply dict), on
embeddings (a handler result `{"trickle": ...}` keeps the default vectors), on transcriptions
(`set_transcription({"text": ..., "trickle": ...})`) and on `GET /v1/models` (`models_trickle`).
A streamed reply with `framing="close"` is an event stream without chunking that ends when the
connection closes.
`flood`: `{"what": "content" | "reasoning" | "line", "for": s}` after the chunks sends a hostile stream as fast
as the client reads it, for at most `for` seconds (then it ends without finishing): 64 KB content (or
reasoning) deltas, or one line that never ends (`data: {"choices": ...` and then only letters).
`streams_cut` counts streamed answers the client hung up on before their end (a real server
notices the same and stops generating).
`tools_supported=False` answers any request carrying `tools` with HTTP 400 naming `tools`.
`reasoning_back=True` answers like DeepSeek's thinking mode: HTTP 400 "The `reasoning_content` in
the thinking mode must be passed back to the API." when an assistant message with `tool_calls`
comes without its `reasoning_content` (api-docs.deepseek.com/guides/thinking_mode#tool-calls).

`response_formats=("text", "json_object")` makes the server reject any other
`response_format` type the way llama-cpp-python's server does (HTTP 500, a pydantic message
naming `response_format`), before any queued reply is used; default: every type accepted.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from collections import deque
from typing import Any, Callable
from urllib.parse import urlsplit

from tests.fakes._http import DISCONNECTS, FakeHandler, FakeServer, multipart_parts

DEFAULT_REPLY = '{"reply": "ok"}'
DEFAULT_MODEL = "fake-model"
DEFAULT_TRANSCRIPTION = "fake transcription"

Reply = str | dict


class RecordedRequest(dict):
    """One received request: the dict is its JSON body; attributes carry the rest."""

    def __init__(
        self, method: str, path: str, headers: Any, body: bytes, data: dict, client: tuple | None = None
    ) -> None:
        super().__init__(data)
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.client = client  # (host, port) of the client's connection: the same port = a reused connection


def hash_embedding(text: str, dim: int = 64) -> list[float]:
    """Deterministic unit vector: each lower-cased word adds ±1 to a hashed bucket."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        bucket = int.from_bytes(digest[:4], "big") % dim
        vec[bucket] += 1.0 if digest[4] % 2 == 0 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:
        vec[0] = 1.0  # a zero vector would break cosine similarity
        return vec
    return [v / norm for v in vec]


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _words(content: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", content)


class _Handler(FakeHandler):
    def _error(self, status: int, message: str, code: str = "not_found") -> None:
        self.send_json(status, {"error": {"message": message, "type": "invalid_request_error", "code": code}})

    def _authorized(self) -> bool:
        key = self.server.fake.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._error(401, "Incorrect API key provided.", "invalid_api_key")
        return False

    # ----- routes -----------------------------------------------------------------

    def do_GET(self) -> None:
        self.guard(self._get)

    def do_POST(self) -> None:
        self.guard(self._post)

    def _get(self) -> None:
        path = urlsplit(self.path).path
        self.server.fake._record("GET", path, self.headers, b"", {}, self.client_address)
        if not self._authorized():
            return
        if path.rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.server.fake.models]
            payload = json.dumps({"object": "list", "data": data}).encode("utf-8")
            self.deliver(200, payload, "application/json", self.server.fake.models_trickle)
        else:
            self._error(404, f"no route GET {path}")

    def _post(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        body = self.read_body()
        content_type = self.headers.get("Content-Type", "")
        if content_type.startswith("multipart/form-data"):
            data = _parse_multipart(content_type, body)
        else:
            try:
                parsed = json.loads(body) if body else {}
            except ValueError:
                parsed = {}
            data = parsed if isinstance(parsed, dict) else {}
        fake = self.server.fake
        fake._record("POST", path, self.headers, body, data, self.client_address)
        if not self._authorized():
            return
        if path == "/v1/chat/completions":
            self._chat(data)
        elif path == "/v1/embeddings":
            self._embeddings(data)
        elif path == "/v1/audio/transcriptions":
            self._transcription(data)
        elif path == "/v1/audio/speech":
            self._speech(data)
        else:
            self._error(404, f"no route POST {path}")

    def _custom(self, spec: dict) -> bool:
        """Send a `raw` or `status` answer if the spec has one; True when sent."""
        headers = spec.get("headers") or {}
        if "raw" in spec:
            raw = spec["raw"]
            if isinstance(raw, (dict, list)):
                payload = json.dumps(raw).encode("utf-8")
            else:
                payload = raw if isinstance(raw, bytes) else str(raw).encode("utf-8")
            ctype = spec.get("content_type", "application/json")
            self.send(int(spec.get("status", 200)), payload, ctype, headers)
            return True
        if "status" in spec:
            status = int(spec["status"])
            body = spec.get("body")
            if body is None:
                body = {"error": {"message": f"fake error {status}", "type": "api_error", "code": status}}
            if isinstance(body, (dict, list)):
                self.send_json(status, body, headers)
            else:
                payload = body if isinstance(body, bytes) else str(body).encode("utf-8")
                self.send(status, payload, spec.get("content_type", "text/plain"), headers)
            return True
        return False

    def _chat(self, request: dict) -> None:
        fake = self.server.fake
        rejected = fake._rejected_format(request)
        if rejected is not None:
            self.send_json(500, rejected)
            return
        if request.get("tools") and not fake.tools_supported:
            self.send_json(
                400,
                {
                    "error": {
                        "message": "'tools' is not supported by this model",
                        "type": "invalid_request_error",
                        "param": "tools",
                        "code": None,
                    }
                },
            )
            return
        if fake.reasoning_back and any(
            isinstance(m, dict)
            and m.get("role") == "assistant"
            and m.get("tool_calls")
            and not m.get("reasoning_content")
            for m in request.get("messages") or []
        ):
            self.send_json(
                400,
                {
                    "error": {
                        "message": "The `reasoning_content` in the thinking mode must be passed back to the API.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_request_error",
                    }
                },
            )
            return
        spec = fake._next_chat_reply(request)
        delay = fake.latency + float(spec.get("delay", 0))
        if delay > 0:
            time.sleep(delay)
        if self._custom(spec):
            return
        content = str(spec.get("content", DEFAULT_REPLY))
        usage = spec["usage"] if "usage" in spec else _basic_usage(request, content)
        if request.get("stream"):
            self._stream(request, spec, content, usage)
            return
        message: dict = {"role": "assistant", "content": content}
        if spec.get("tool_calls"):
            message["content"] = spec.get("content")
            message["tool_calls"] = [_tool_call(c) for c in spec["tool_calls"]]
        if spec.get("reasoning"):
            message[spec.get("reasoning_field", "reasoning_content")] = spec["reasoning"]
        answer = {
            **fake._ids(request),
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": spec.get("finish_reason", "tool_calls" if spec.get("tool_calls") else "stop"),
                }
            ],
        }
        if usage is not None:
            answer["usage"] = usage
        if "timings" in spec:
            answer["timings"] = spec["timings"]
        self.deliver(200, json.dumps(answer).encode("utf-8"), "application/json", spec.get("trickle"))

    def _event(self, obj: Any) -> None:
        self.send_chunk(b"data: " + json.dumps(obj).encode("utf-8") + b"\n\n")

    def _stream(self, request: dict, spec: dict, content: str, usage: dict | None) -> None:
        try:
            self._stream_events(request, spec, content, usage)
        except DISCONNECTS:
            with self.server.fake._lock:  # the client hung up mid-answer, as a stopped turn does
                self.server.fake.streams_cut += 1
            raise

    def _stream_events(self, request: dict, spec: dict, content: str, usage: dict | None) -> None:
        fake = self.server.fake
        self.close_framed = spec.get("framing") == "close"
        self.start_chunked("text/event-stream", {"Cache-Control": "no-cache"})
        base = {**fake._ids(request), "object": "chat.completion.chunk"}
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        extra = {"usage": None} if include_usage else {}

        def delta(d: dict, finish: str | None = None) -> dict:
            return {**base, "choices": [{"index": 0, "delta": d, "finish_reason": finish}], **extra}

        self.send_chunk(b": fake-server processing\n\n")
        self._event(delta({"role": "assistant", "content": ""}))
        if spec.get("reasoning"):
            self._event(delta({spec.get("reasoning_field", "reasoning_content"): spec["reasoning"]}))
        pieces = spec.get("stream_chunks")
        if spec.get("tool_calls"):
            pieces = [spec["content"]] if spec.get("content") else []
            labels = spec.get("tool_index", "position")
            for position, call in enumerate(_tool_call(c) for c in spec["tool_calls"]):
                args = call["function"]["arguments"]
                half = len(args) // 2
                index = {} if labels == "none" else {"index": 0 if labels == "zero" else position}
                self._event(
                    delta(
                        {
                            "tool_calls": [
                                {
                                    **index,
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {"name": call["function"]["name"], "arguments": args[:half]},
                                }
                            ]
                        }
                    )
                )
                again = {"name": call["function"]["name"]} if spec.get("tool_name_each_delta") else {}
                self._event(delta({"tool_calls": [{**index, "function": {**again, "arguments": args[half:]}}]}))
        for index, piece in enumerate(pieces if pieces is not None else _words(content)):
            if spec.get("chunk_gate"):
                spec["chunk_gate"](index)
            self._event(delta({"content": piece}))
            if spec.get("chunk_delay"):
                time.sleep(float(spec["chunk_delay"]))
        if spec.get("flood"):
            self._flood(spec["flood"], delta)
        if spec.get("keepalive_every"):
            until = time.monotonic() + float(spec.get("keepalive_for", 0))
            while time.monotonic() < until:
                time.sleep(float(spec["keepalive_every"]))
                self.send_chunk(b": keep-alive\n\n")
        if spec.get("stream_cut"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if spec.get("stream_error") is not None:
            self._event({"error": spec["stream_error"]})
            self.send_chunk(b"")  # zero-length chunk ends the body without [DONE]
            return
        self._event(delta({}, spec.get("finish_reason", "tool_calls" if spec.get("tool_calls") else "stop")))
        if include_usage and usage is not None:
            self._event({**base, "choices": [], "usage": usage})
        self.send_chunk(b"data: [DONE]\n\n")
        self.send_chunk(b"")

    def _flood(self, flood: dict, delta: Callable[[dict], dict]) -> None:
        """A hostile stream for at most ``flood["for"]`` seconds (a bound for the test, not for the client)."""
        what = flood.get("what", "content")
        if what == "line":
            self.send_chunk(b'data: {"choices": [{"index": 0, "delta": {"content": "')
            piece = b"y" * 65536
        else:
            field = "reasoning_content" if what == "reasoning" else "content"
            piece = b"data: " + json.dumps(delta({field: "x" * 65536})).encode("utf-8") + b"\n\n"
        until = time.monotonic() + float(flood.get("for", 10))
        while time.monotonic() < until:
            self.send_chunk(piece)

    def _embeddings(self, request: dict) -> None:
        fake = self.server.fake
        texts = request.get("input", "")
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
        with fake._lock:
            handler = fake._embeddings_handler
        result = handler(texts) if handler else None
        trickle = None
        if isinstance(result, dict):
            if self._custom(result):
                return
            trickle, result = result.get("trickle"), None
        if result is None:
            result = [hash_embedding(t, fake.embedding_dim) for t in texts]
        tokens = sum(_estimate_tokens(t) for t in texts)
        answer = {
            "object": "list",
            "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(result)],
            "model": request.get("model") or DEFAULT_MODEL,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        self.deliver(200, json.dumps(answer).encode("utf-8"), "application/json", trickle)

    def _transcription(self, form: dict) -> None:
        fake = self.server.fake
        with fake._lock:
            reply = fake._transcription
        if isinstance(reply, dict) and self._custom(reply):
            return
        text = reply if isinstance(reply, str) else str(reply.get("text", DEFAULT_TRANSCRIPTION))
        trickle = None if isinstance(reply, str) else reply.get("trickle")
        if form.get("response_format") == "text":
            self.deliver(200, text.encode("utf-8"), "text/plain; charset=utf-8", trickle)
        else:
            self.deliver(200, json.dumps({"text": text}).encode("utf-8"), "application/json", trickle)

    def _speech(self, request: dict) -> None:
        from tests.fakes.speech_audio import CONTENT_TYPES, encoded

        fake = self.server.fake
        with fake._lock:
            reply = fake._speech
        if isinstance(reply, dict) and self._custom(reply):
            return
        text = request.get("input")
        fmt = (reply or {}).get("format") or request.get("response_format") or "mp3"
        if not isinstance(text, str) or not text.strip():
            self._error(400, "Input is required.", "invalid_request_error")
            return
        if fmt not in CONTENT_TYPES:
            self._error(400, f"Unsupported response_format: {fmt}", "invalid_request_error")
            return
        seconds = min(3.0, max(0.3, 0.05 * len(text)))
        self.deliver(200, encoded(fmt, seconds), CONTENT_TYPES[fmt])


def _tool_call(spec: dict) -> dict:
    args = spec.get("arguments", {})
    return {
        "id": spec.get("id", "call_1"),
        "type": "function",
        "function": {"name": spec["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
    }


def _basic_usage(request: dict, content: str) -> dict:
    prompt_chars = sum(len(str(m.get("content", ""))) for m in request.get("messages") or [] if isinstance(m, dict))
    prompt = max(1, prompt_chars // 4)
    completion = _estimate_tokens(content)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _parse_multipart(content_type: str, body: bytes) -> dict:
    """Form fields as strings, plus file_name/file_size/file_content_type of the upload."""
    form: dict = {}
    for name, filename, part_type, payload in multipart_parts(content_type, body):
        if filename is not None:
            form["file_name"] = filename
            form["file_size"] = len(payload)
            form["file_content_type"] = part_type
        elif name:
            form[str(name)] = payload.decode("utf-8", errors="replace")
    return form


class FakeChatServer:
    """Scriptable OpenAI-compatible server in a daemon thread (see the module docstring)."""

    def __init__(
        self,
        latency: float = 0.0,
        *,
        api_key: str | None = None,
        models: tuple[str, ...] | list[str] = (DEFAULT_MODEL,),
        embedding_dim: int = 64,
        response_formats: tuple[str, ...] | None = None,
        tools_supported: bool = True,
        reasoning_back: bool = False,
    ) -> None:
        self.latency = latency
        self.tools_supported = tools_supported
        self.reasoning_back = reasoning_back
        self.response_formats = response_formats
        self.api_key = api_key
        self.models = list(models)
        self.models_trickle: dict | None = None  # a `trickle` spec for GET /v1/models
        self.embedding_dim = embedding_dim
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._queue: deque[Reply] = deque()
        self._handler: Callable[[dict], Reply | None] | None = None
        self._embeddings_handler: Callable[[list[str]], Any] | None = None
        self._transcription: str | dict = DEFAULT_TRANSCRIPTION
        self._speech: dict | None = None
        self._records: list[RecordedRequest] = []
        self._counter = 0
        self.streams_cut = 0  # streamed answers the client hung up on before their end
        self._server: FakeServer | None = None

    # ----- lifecycle --------------------------------------------------------------

    def start(self) -> "FakeChatServer":
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        if self._server is not None:
            return self
        self._server = FakeServer(_Handler, self).start("fake-chat-server")
        return self

    def stop(self) -> None:
        """Stop serving and drop open connections (later requests get connection refused)."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    def __enter__(self) -> "FakeChatServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeChatServer is not started")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """'http://127.0.0.1:PORT/v1', the value for a runner's base_url."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ----- scripting --------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Queue chat answers, sent in order to the next chat requests."""
        with self._lock:
            self._queue.extend(replies)

    def set_handler(self, fn: Callable[[dict], Reply | None] | None) -> None:
        """Decide answers dynamically when the queue is empty; None from fn means default."""
        with self._lock:
            self._handler = fn

    def set_embeddings_handler(self, fn: Callable[[list[str]], Any] | None) -> None:
        """fn(texts) -> list of vectors, or a reply dict with `status`/`raw` for an error."""
        with self._lock:
            self._embeddings_handler = fn

    def set_transcription(self, text: str | dict) -> None:
        """Text returned by /v1/audio/transcriptions (or a reply dict with `status`/`raw`)."""
        with self._lock:
            self._transcription = text

    def set_speech(self, reply: dict | None) -> None:
        """How /v1/audio/speech answers: None (real audio in the format asked for), ``{"format": "wav"}``
        (that format whatever was asked), or a reply dict with `status`/`raw`."""
        with self._lock:
            self._speech = reply

    @property
    def pending(self) -> int:
        """Queued chat answers not yet sent."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget queued answers, handlers and recorded requests."""
        with self._lock:
            self._queue.clear()
            self._handler = None
            self._speech = None
            self._embeddings_handler = None
            self._transcription = DEFAULT_TRANSCRIPTION
            self._records.clear()
            self.streams_cut = 0

    # ----- inspection -------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far (all endpoints)."""
        with self._lock:
            return list(self._records)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """A snapshot of the chat completion requests received so far."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_for_requests(self, count: int, timeout: float = 5.0, path: str | None = None) -> bool:
        """Block until `count` requests (whose path ends with `path`, if given) have arrived."""
        deadline = time.monotonic() + timeout

        def enough() -> bool:
            return sum(1 for r in self._records if path is None or r.path.endswith(path)) >= count

        with self._arrived:
            while not enough():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(left)
            return True

    # ----- internals used by the handler ------------------------------------------

    def _record(
        self, method: str, path: str, headers: Any, body: bytes, data: dict, client: tuple | None = None
    ) -> None:
        with self._arrived:
            self._records.append(RecordedRequest(method, path, headers, body, data, client))
            self._arrived.notify_all()

    def _rejected_format(self, request: dict) -> dict | None:
        """llama-cpp-python's answer to a response_format type it does not know, or None."""
        fmt = request.get("response_format")
        if self.response_formats is None or not isinstance(fmt, dict) or fmt.get("type") in self.response_formats:
            return None
        allowed = " or ".join(repr(t) for t in self.response_formats)
        detail = {
            "type": "literal_error",
            "loc": ("body", "response_format", "type"),
            "msg": f"Input should be {allowed}",
            "input": fmt.get("type"),
            "ctx": {"expected": allowed},
        }
        return {
            "error": {
                "message": f"1 validation error: {detail!r}",
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        }

    def _next_chat_reply(self, request: dict) -> dict:
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
            handler = self._handler
        if reply is None and handler is not None:
            reply = handler(request)
        if reply is None:
            reply = DEFAULT_REPLY
        return {"content": reply} if isinstance(reply, str) else dict(reply)

    def _ids(self, request: dict) -> dict:
        with self._lock:
            self._counter += 1
            n = self._counter
        return {"id": f"chatcmpl-fake-{n}", "created": int(time.time()), "model": request.get("model") or DEFAULT_MODEL}


__all__ = [
    "FakeChatServer",
    "RecordedRequest",
    "hash_embedding",
    "DEFAULT_REPLY",
    "DEFAULT_MODEL",
    "DEFAULT_TRANSCRIPTION",
]
