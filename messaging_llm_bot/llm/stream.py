"""Server-sent-events parsing and assembly of streamed Chat Completions chunks.

Pure logic over already-decoded lines; the HTTP shell lives in llm.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from messaging_llm_bot.llm.errors import LLMError, classify, parse_error_body
from messaging_llm_bot.llm.wire import JsonObject, Message


def iter_sse_data(lines: Iterable[str], done: list[bool] | None = None) -> Iterator[str]:
    """Yield the payload of each `data:` line; skip blanks, `:` comments and other fields.

    Stops at `data: [DONE]`; if `done` is given, `done[0]` is set True when that happens.
    """
    for line in lines:
        if not line or line.startswith(":"):
            continue
        if not line.startswith("data:"):
            continue  # event:, id:, retry: carry nothing we use
        payload = line[5:].strip()
        if payload == "[DONE]":
            if done is not None:
                done[0] = True
            return
        if payload:
            yield payload


def content_text(content: object) -> str:
    """Message content as plain text (string, or the text parts of a part list)."""
    # Some servers send content as a list of typed parts instead of a string.
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _raise_stream_error(chunk: JsonObject, choices: list[object], runner: str, base_url: str) -> None:
    """Raise the error a chunk carries: at its top or, as OpenRouter also sends it, on a choice
    (finish_reason "error"); either ends the answer."""
    error = chunk.get("error") or next((c["error"] for c in choices if isinstance(c, dict) and c.get("error")), None)
    if error:
        message, codes = parse_error_body(json.dumps({"error": error}))
        kind, quota = classify(None, message, codes)
        raise LLMError(
            kind,
            f"error in the middle of the stream: {message}",
            runner=runner,
            base_url=base_url,
            quota=quota,
        )


class StreamAssembler:
    """Accumulates `chat.completion.chunk` objects into one final completion object."""

    def __init__(self) -> None:
        # The content so far: the text last read (``text``) and the deltas since. A read joins the two once; growing
        # one text at every delta copied it whole each time (its length squared). ``length`` counts both.
        self._content = ""
        self._pending: list[str] = []
        self.length = 0
        self.reasoning: list[str] = []
        self.reasoning_key = "reasoning_content"  # the field the server streams it in (Ollama, vLLM: reasoning)
        self.usage: JsonObject | None = None
        self.finish_reason: str | None = None
        self.meta: JsonObject = {}
        self.saw_choice = False
        self.chunks = 0
        self.timings: JsonObject | None = None
        self.tool_calls: list[JsonObject] = []  # streamed native tool calls in the order they began
        self._open_calls: dict[int | None, JsonObject] = {}  # the call each index (None: no index) continues

    def feed_json(self, payload: str, runner: str, base_url: str) -> str:
        """Parse one data payload; returns the content delta ('' if none). Raises LLMError."""
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise LLMError(
                "bad_response",
                f"a stream event is not JSON: {payload[:80]!r}",
                runner=runner,
                base_url=base_url,
            ) from None
        if not isinstance(chunk, dict):
            raise LLMError("bad_response", "a stream event is not a JSON object", runner=runner, base_url=base_url)
        return self.feed(chunk, runner, base_url)

    def feed(self, chunk: JsonObject, runner: str, base_url: str) -> str:
        """Take one decoded chunk; returns the content delta. A chunk with `error` raises."""
        self.chunks += 1
        choices = value if isinstance(value := chunk.get("choices"), list) else []
        _raise_stream_error(chunk, choices, runner, base_url)
        self._keep_meta(chunk)
        delta_text = ""
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            self.saw_choice = True
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, dict):
                delta_text = self._feed_delta(delta)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return delta_text

    def _keep_meta(self, chunk: JsonObject) -> None:
        """The response's id, model and the like from their first chunk; usage and timings from their last."""
        for key in ("id", "model", "created", "system_fingerprint"):
            if key in chunk and key not in self.meta:
                self.meta[key] = chunk[key]
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self.timings = chunk["timings"]

    def _feed_delta(self, delta: JsonObject) -> str:
        """Take one delta of the first choice: its content (returned), reasoning and tool-call fragments."""
        delta_text = content_text(delta.get("content"))
        if delta_text:
            self._pending.append(delta_text)
            self.length += len(delta_text)
        for key in ("reasoning_content", "reasoning"):
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                self.reasoning.append(piece)
                self.reasoning_key = key
                break
        self._feed_tool_calls(delta.get("tool_calls"))
        return delta_text

    def _feed_tool_calls(self, parts: object) -> None:
        """Merge streamed tool-call fragments: id, type and name arrive once, arguments in pieces.

        A fragment continues the call its ``index`` names. Ollama labels every call 0, so a
        fragment with a name and another id after a call whose arguments are complete starts a
        new one; without any ``index`` (Gemini) a fragment continues the last call (a second in
        the same chunk starts one).
        """
        if not isinstance(parts, list):
            return
        for position, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            index = part.get("index")
            slot = index if isinstance(index, int) and not isinstance(index, bool) else None
            call = self._open_calls.get(slot) if slot is not None or position == 0 else None
            if call is None or _starts_another_call(call, part):
                call = {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                self.tool_calls.append(call)
            self._open_calls[slot] = call
            if part.get("id"):
                call["id"] = part["id"]
            fn = part.get("function") or {}
            if isinstance(fn, dict):
                # Pieces of a name are joined; the whole name sent again with each delta is kept once.
                if isinstance(fn.get("name"), str) and fn["name"] != call["function"]["name"]:
                    call["function"]["name"] += fn["name"]
                args = fn.get("arguments")
                if isinstance(args, str):
                    call["function"]["arguments"] += args
                elif isinstance(args, dict):  # some servers send the object whole
                    call["function"]["arguments"] = args

    def text(self) -> str:
        """All content received so far."""
        if self._pending:
            self._content = "".join([self._content, *self._pending])
            self._pending.clear()
        return self._content

    def result(self) -> JsonObject:
        """The assembled response in the non-streamed `chat.completion` shape."""
        message: Message = {"role": "assistant", "content": self.text()}
        if self.reasoning:
            message[self.reasoning_key] = "".join(self.reasoning)
        if self.tool_calls:
            message["tool_calls"] = list(self.tool_calls)
        raw = {
            **self.meta,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        }
        if self.timings is not None:
            raw["timings"] = self.timings
        return raw


def _starts_another_call(call: JsonObject, part: JsonObject) -> bool:
    """True when a fragment for an open call's index is the start of a new call (Ollama's index 0)."""
    fn = part.get("function")
    if not (part.get("id") and call["id"] and part["id"] != call["id"] and isinstance(fn, dict) and fn.get("name")):
        return False
    args = call["function"]["arguments"]
    if isinstance(args, dict):
        return True
    try:
        json.loads(args)
    except ValueError:
        return False  # still arriving (some servers send a new id with every fragment)
    return True
