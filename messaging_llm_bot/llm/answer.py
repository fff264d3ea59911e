"""One model answer: reading its body (a JSON object or an SSE stream) under the call's deadline,
an error answer's text, the errors a broken or cut answer becomes, and the ``Completion`` record.

Pure of the client's state: each function takes the runner it talks to (for its name, address and
the key to redact).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import requests
import urllib3

from assistant_framework.http_deadline import READ_SIZE, BodyTooLarge, read_body
from assistant_framework.http_deadline import DeadlineExceeded as HTTPDeadlineExceeded
from messaging_llm_bot.llm.deadline import (
    CallDeadline,
    CallDeadlineExceeded,
    answer_deadline_detail,
    stream_deadline_detail,
)
from messaging_llm_bot.llm.errors import LLMError, classify, connection_reason, parse_error_body, redact
from messaging_llm_bot.llm.http import drain
from messaging_llm_bot.llm.pace import PacedDeltas
from messaging_llm_bot.llm.runners import RunnerConfig
from messaging_llm_bot.llm.stream import StreamAssembler, content_text, iter_sse_data
from messaging_llm_bot.llm.usage import Usage, message_reasoning, parse_usage, split_think
from messaging_llm_bot.llm.wire import JsonObject

#: An answer larger than this is refused, streamed or not (a chat answer is far smaller; a stream's events
#: carry a few hundred bytes a token, so a long reasoning answer still fits).
MAX_ANSWER_BYTES = 32 * 1024 * 1024
#: How much of an error answer's body is read for its message.
MAX_ERROR_BYTES = 64 * 1024


@dataclass
class Completion:
    """One model answer: visible `text`, separate `reasoning`, usage and the raw JSON."""

    text: str
    reasoning: str | None
    usage: Usage
    runner: str
    model: str
    elapsed_s: float
    raw: JsonObject


def transport_error(runner: RunnerConfig, exc: BaseException) -> LLMError:
    """The error for a call that got no answer: timed out, or no connection (with the reason)."""
    text = f"{type(exc).__name__} {exc}".lower()
    if isinstance(exc, requests.Timeout) or "timed out" in text:
        kind, detail = "timeout", f"no answer within {runner.timeout_seconds:g} s"
    else:
        kind, detail = "connection", connection_reason(exc)
    return LLMError(kind, detail, runner=runner.name, base_url=runner.base_url)


def reached_server(exc: BaseException) -> bool:
    """False when ``exc`` says the connection was never made (refused, no route, no name, connect timeout):
    nothing of the request reached the server. True otherwise (it may have read the prompt and worked on it)."""
    if isinstance(exc, requests.ConnectTimeout):
        return False
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return not isinstance(reason, urllib3.exceptions.ConnectTimeoutError)  # NewConnectionError is one


def timeout_error(runner: RunnerConfig, partial: bytes) -> LLMError:
    """The error for an answer the call's deadline cut (``partial``: what had arrived)."""
    detail = answer_deadline_detail(runner.timeout_seconds, partial)
    return LLMError("timeout", detail, runner=runner.name, base_url=runner.base_url)


def bad_answer(runner: RunnerConfig, detail: str) -> LLMError:
    """The error for an answer that is no Chat Completions answer."""
    return LLMError("bad_response", detail, runner=runner.name, base_url=runner.base_url)


def error_text(response: requests.Response, deadline: CallDeadline) -> str:
    """An error answer's body as text, as far as it arrives before the deadline (at most 64 KB)."""
    try:
        body = read_body(response, deadline, max_bytes=MAX_ERROR_BYTES)
    except HTTPDeadlineExceeded as exc:
        body = exc.partial
    except (BodyTooLarge, requests.RequestException, urllib3.exceptions.HTTPError, OSError):
        body = b""
    return body.decode(response.encoding or "utf-8", errors="replace")


def read_json(response: requests.Response, runner: RunnerConfig, deadline: CallDeadline) -> JsonObject:
    """A JSON answer's object, read whole under the deadline (at most ``MAX_ANSWER_BYTES``)."""
    try:
        body = read_body(response, deadline, max_bytes=MAX_ANSWER_BYTES)
    except HTTPDeadlineExceeded as exc:
        raise timeout_error(runner, exc.partial) from None
    except BodyTooLarge:
        raise bad_answer(runner, f"the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB") from None
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        err = transport_error(runner, exc)
        if err.kind == "connection":  # it answered, then went away: not "unreachable"
            err = bad_answer(runner, "the server closed the connection in the middle of the answer")
        raise err from None
    try:
        raw = json.loads(body)  # whitespace keep-alives before the object are allowed
    except ValueError:
        snippet = redact(body[:60].decode("utf-8", errors="replace"), runner.api_key)
        raise bad_answer(runner, f"the body is not JSON: {snippet!r}") from None
    if not isinstance(raw, dict):
        raise bad_answer(runner, "the body is not a JSON object")
    return raw


def stream_lines(response: requests.Response, max_bytes: int = MAX_ANSWER_BYTES) -> Iterator[str]:
    """The lines of a streamed body as they arrive (one socket read at a time, decompressed at most
    ``READ_SIZE`` at a time), ``max_bytes`` at most in all, one line included: past that ``BodyTooLarge``.
    ``iter_lines`` kept every byte of an endless stream or line (a hostile server's gigabytes)."""
    raw = response.raw
    read = getattr(raw, "read1", None) or raw.read
    pending: list[bytes] = []  # the start of a line not ended yet, in pieces (joining each piece costs a square)
    total = 0
    while chunk := read(READ_SIZE, decode_content=True):
        total += len(chunk)
        if total > max_bytes:
            raise BodyTooLarge(max_bytes)
        if b"\n" not in chunk and b"\r" not in chunk:
            pending.append(chunk)
            continue
        lines = (b"".join(pending) + chunk).splitlines()
        pending = [] if chunk.endswith((b"\n", b"\r")) else [lines.pop()]
        # Decode bytes ourselves: requests assumes ISO-8859-1 for text/* without a charset.
        yield from (line.decode("utf-8", errors="replace") for line in lines)
    if pending:
        yield b"".join(pending).decode("utf-8", errors="replace")


def read_stream(
    response: requests.Response,
    runner: RunnerConfig,
    on_delta: Callable[[str], None] | None,
    deadline: CallDeadline | None = None,
) -> JsonObject:
    """A streamed (SSE) answer assembled into one answer object; ``on_delta`` gets the visible text so far."""
    assembler = StreamAssembler()
    shown = None if on_delta is None else PacedDeltas(on_delta, assembler.text)
    done = [False]
    lines = stream_lines(response)
    if deadline is not None:
        lines = deadline.lines(response, lines)
    try:
        for payload in iter_sse_data(lines, done):
            delta = assembler.feed_json(payload, runner.name, runner.base_url)
            if delta and shown is not None:
                shown.grew(assembler.length)
    except BodyTooLarge:
        raise bad_answer(runner, f"the answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB") from None
    except (CallDeadlineExceeded, requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        if deadline is not None and deadline.expired:
            raise LLMError(
                "timeout",
                stream_deadline_detail(runner.timeout_seconds, assembler.text()),
                runner=runner.name,
                base_url=runner.base_url,
            ) from None
        err = transport_error(runner, exc)
        if err.kind == "connection":  # it answered, then went away (crashed, killed): not "unreachable"
            err = bad_answer(runner, "the server closed the connection in the middle of the answer")
        raise err from None
    except LLMError as err:
        err.detail = redact(err.detail, runner.api_key)
        raise
    drain(lines)  # read past [DONE] to the body's end: the connection goes back to the pool
    if not assembler.saw_choice:
        raise bad_answer(runner, "the stream carried no choices")
    if not done[0] and assembler.finish_reason is None:
        raise bad_answer(runner, "the stream ended before the answer was finished")
    if shown is not None:
        shown.ended(assembler.length)  # the whole answer is shown before the turn goes on
    return assembler.result()


def body_error(runner: RunnerConfig, error: object) -> LLMError:
    """An LLMError for an error object sent in a 200 answer's body."""
    message, codes = parse_error_body(json.dumps({"error": error}))
    kind, quota = classify(None, message, codes)
    return LLMError(kind, redact(message, runner.api_key), runner=runner.name, base_url=runner.base_url, quota=quota)


def to_completion(raw: JsonObject, runner: RunnerConfig, elapsed: float) -> Completion:
    """The Completion of an answer object; an error carried in a 200 answer is raised."""
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices:
        if raw.get("error"):
            raise body_error(runner, raw["error"])
        raise bad_answer(runner, "the answer has no choices")
    choice = choices[0]
    if isinstance(choice, dict) and (choice.get("error") or choice.get("finish_reason") == "error"):
        # OpenRouter: an error while the model wrote keeps HTTP 200; the text so far is no answer.
        raise body_error(runner, choice.get("error") or "the model stopped with an error")
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise bad_answer(runner, "the first choice has no message")
    text, think = split_think(content_text(message.get("content")))
    reasoning = message_reasoning(message) or think
    return Completion(
        text=text,
        reasoning=reasoning,
        usage=parse_usage(raw.get("usage"), raw),
        runner=runner.name,
        model=str(raw.get("model") or runner.model),
        elapsed_s=elapsed,
        raw=raw,
    )
