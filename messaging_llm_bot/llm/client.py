"""OpenAI-compatible Chat Completions client over `requests` (no provider SDK).

One `LLMClient` per process: it tries the configured runners in order, retries
408/429/5xx once on the same runner (honouring `Retry-After`), bounds concurrent provider
calls with a semaphore, and normalises usage and reasoning across servers. Per runner it also
tries the answer formats (llm/structured.py) in the same loop. Reading one answer's body and
turning it into a `Completion` is llm/answer.py.

Thread safety: one pooled `requests.Session` is shared by all threads. That is safe for
our use (no cookies, no per-call session state; urllib3's pool is thread-safe) and keeps
connections warm; the pool is sized to `max_concurrency`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import requests

from assistant_framework.config import ConfigError
from assistant_framework.config.settings import LLMSettings
from assistant_framework.config.settings.fields import read_record
from assistant_framework.http_deadline import Deadline
from assistant_framework.spending import CapUse, SpendingLedger, call_estimate, none_left_text
from messaging_llm_bot.llm.answer import (
    Completion,
    error_text,
    reached_server,
    read_json,
    read_stream,
    timeout_error,
    to_completion,
    transport_error,
)
from messaging_llm_bot.llm.body import BodyEncoder
from messaging_llm_bot.llm.caps import count_call, hold_call, refusal, release_call, settle_failed_call
from messaging_llm_bot.llm.deadline import CallDeadline
from messaging_llm_bot.llm.errors import LLMError, http_error, names_response_format
from messaging_llm_bot.llm.hangup import hang_up_on
from messaging_llm_bot.llm.http import EnvironmentCache, NetSettings, make_session
from messaging_llm_bot.llm.runners import (
    RESERVED_KEYS,
    RunnerConfig,
    runner_records,
    runners_from_config,
    unset_key_variable,
    vision_order,
)
from messaging_llm_bot.llm.slots import PrioritySlots
from messaging_llm_bot.llm.structured import TOOLS, FormatChooser, format_fields, requested_format
from messaging_llm_bot.llm.usage import Usage, parse_usage
from messaging_llm_bot.llm.wire import JsonObject, Message

__all__ = [
    "Completion",
    "LLMClient",
    "LLMError",
    "RunnerConfig",
    "Usage",
    "parse_usage",
    "runners_from_config",
]

log = logging.getLogger(__name__)


def preferred_first(runners: list[RunnerConfig], prefer: str | None) -> list[RunnerConfig]:
    """``runners`` with the one named ``prefer`` moved to the front (unchanged when none has that name)."""
    chosen = [r for r in runners if r.name == prefer]
    return chosen + [r for r in runners if r.name != prefer] if chosen else runners


@dataclass(frozen=True)
class _Call:
    """What one ``complete`` asks, the same for every runner and answer format it tries."""

    messages: list[Message]
    stream: bool
    on_delta: Callable[[str], None] | None
    extra: JsonObject | None
    schema: JsonObject | None
    schema_name: str
    tools: list[JsonObject] | None
    native_messages: Callable[[], list[Message]] | None
    stop: threading.Event | None


class LLMClient:
    """Chat Completions over HTTP with runner fallback, retries and a concurrency bound.

    Built from the ``llm`` record (``LLMSettings``: the runners, retries, temperature, max_tokens and
    the concurrency, with their defaults); ``from_section`` reads an unchecked section dict into one.
    A session passed in is owned by the caller and not closed by `close()`.
    """

    def __init__(
        self,
        llm: LLMSettings,
        session: requests.Session | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.runners: list[RunnerConfig] = runners_from_config(llm)
        self.settings = llm
        self.max_concurrency = max(1, self.settings.max_concurrency)
        self.retries = max(0, self.settings.retries_per_runner)
        self.retry_max_wait = self.settings.retry_max_wait_seconds
        self.retry_backoff = self.settings.retry_backoff_seconds
        # User turns first: calls inside slots.background_calls() wait while a user call waits.
        self._semaphore = PrioritySlots(self.max_concurrency)
        self._sleep = sleep
        # Per runner: which answer formats the server takes (learnt once per process, llm/structured.py).
        self.formats = FormatChooser()
        #: The spending caps' counts (assistant_framework/spending/); None: no caps are kept (the runtime sets it).
        self.spending: SpendingLedger | None = None
        self._owns_session = session is None
        if session is None:
            session = make_session(self.max_concurrency)
        self._session = session
        self._bodies = BodyEncoder()  # the answer schema and tool specs encoded once, not each request
        # Our own session reads proxy settings once (see llm/http.py); a caller's session does its own.
        self._env = EnvironmentCache() if self._owns_session else None

    @classmethod
    def from_section(
        cls,
        section: Mapping[str, object],
        session: requests.Session | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> LLMClient:
        """A client of an unchecked ``llm`` section dict (tests, ``eval --base-url``, doctor's and setup's
        one-runner checks): its runners read leniently (``runner_records``: an unnamed one is runnerN), the
        other keys as the record reads them; ValueError names a bad key."""
        try:
            rest = read_record(LLMSettings, {k: v for k, v in section.items() if k != "runners"}, where="llm")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return cls(replace(rest, runners=runner_records(section)), session, sleep=sleep)

    # ----- pure parts -------------------------------------------------------------

    def build_request(
        self,
        runner: RunnerConfig,
        messages: list[Message],
        stream: bool = False,
        extra: JsonObject | None = None,
    ) -> JsonObject:
        """The JSON body for one call (pure). A None value in extra_body/extra drops the field."""
        body: JsonObject = {"model": runner.model, "messages": messages}
        # null in the config leaves the field out
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        if self.settings.max_tokens is not None:
            body["max_tokens"] = self.settings.max_tokens
        for overrides in (runner.extra_body or {}, extra or {}):
            for key, value in overrides.items():
                if key in RESERVED_KEYS:
                    continue
                if value is None:
                    body.pop(key, None)
                else:
                    body[key] = value
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    # ----- calls ------------------------------------------------------------------

    def complete(
        self,
        messages: list[Message],
        *,
        stream: bool = False,
        on_delta: Callable[[str], None] | None = None,
        runner: str | None = None,
        extra: JsonObject | None = None,
        schema: JsonObject | None = None,
        schema_name: str = "answer",
        tools: list[JsonObject] | None = None,
        native_messages: Callable[[], list[Message]] | None = None,
        vision: bool = False,
        stop: threading.Event | None = None,
        prefer: str | None = None,
    ) -> Completion:
        """Ask the runners in order until one answers; raises LLMError when none does.

        ``prefer`` (a chat's ``/model`` choice) is asked first, the others after it in their order (the
        fallback still applies); a name no runner has, or one that takes no images for ``vision``, changes
        nothing.

        ``stop`` (a ``StopSwitch``, the turn's): when set, the call in flight is hung up at once (also
        while the server still reads the prompt) and no other runner is tried.

        `runner` restricts the call to the named runner; `vision` (the messages carry images) to the
        runners that take images (`llm.runners.vision_order`), in their order. With `stream=True`, `on_delta` is
        called with the visible content accumulated so far (not the new piece) after each
        content delta; a leading `<think>` block is held back. If a runner fails mid-stream
        and the next one takes over, the accumulated text starts again from empty.
        `context_length`, `auth` and `client` errors are raised at once without fallback.

        `schema` asks for an answer of that JSON schema; `tools` (OpenAI tool specs) offers
        native tool calls to runners whose `tool_transport` is native/auto, with the messages
        `native_messages()` gives (tool results as `role: tool`). Per runner the formats are
        tried in order (`self.formats`, llm/structured.py): one the server rejects is dropped
        for the process and the next one is tried on the same runner; the next runner is
        tried only after a failure worth it.
        """
        failures: list[LLMError] = []
        capped: list[CapUse] = []
        call = _Call(messages, stream, on_delta, extra, schema, schema_name, tools, native_messages, stop)
        candidates = preferred_first(self._select(runner, vision), prefer)
        for index, candidate in enumerate(candidates):
            completion = self._on_runner(call, candidate, candidates[index + 1 :], failures, capped)
            if completion is not None:
                return completion
        if not failures:
            raise LLMError("spending_cap", none_left_text(capped))
        last = failures[-1]
        last.attempts = failures[:-1]
        raise last

    def _on_runner(
        self,
        call: _Call,
        candidate: RunnerConfig,
        later: list[RunnerConfig],
        failures: list[LLMError],
        capped: list[CapUse],
    ) -> Completion | None:
        """One runner's answer, its answer formats tried in order; None hands the call to the next runner
        (a failure worth it was added to ``failures``, a spending cap this call would pass to ``capped``)."""
        for mode in self.formats.modes(candidate, schema=call.schema is not None, tools=bool(call.tools)):
            sent = call.native_messages() if mode == TOOLS and call.native_messages else call.messages
            body_extra = format_fields(mode, call.schema, call.schema_name, call.tools, call.extra)
            body = self.build_request(candidate, sent, stream=call.stream, extra=body_extra)
            estimate = call_estimate(body)  # the caps' hold and the count after the call
            held = hold_call(self.spending, candidate, estimate, later)
            if isinstance(held, CapUse):  # this call would pass a spending cap: the next runner answers
                capped.append(held)
                return None
            try:
                completion = self._complete_on(candidate, body, call.stream, call.on_delta, call.stop)
            except LLMError as err:
                err.model = err.model or candidate.model
                settle_failed_call(self.spending, candidate, err, estimate, held, later)
                if call.stop is not None and call.stop.is_set():
                    raise  # the owner stopped the turn: no other format or runner
                if self._next_format_may_answer(candidate, mode, err, body_extra):
                    continue
                failures.append(err)
                if not err.failover:
                    err.attempts = failures[:-1]
                    raise
                return None
            except BaseException:
                release_call(self.spending, held)
                raise
            if call.schema is not None or call.tools:
                self.formats.worked(candidate, mode)
            count_call(self.spending, candidate, completion, estimate, held, later)
            return completion
        return None

    def _next_format_may_answer(
        self, candidate: RunnerConfig, mode: str, err: LLMError, body_extra: JsonObject | None
    ) -> bool:
        """Log a failed call; True when the same runner is asked again in its next answer format (the server
        rejected the format, or the tool specs made the prompt too long)."""
        # A server rejecting a response_format or tools is expected once per runner and is
        # handled here (self.formats logs it once); keep it off the user's screen.
        asked = requested_format(body_extra)
        rejected = asked is not None and names_response_format(err, asked)
        log.log(logging.INFO if rejected else logging.WARNING, "model call failed: %s", err.user_message())
        if mode != "off" and names_response_format(err, mode):
            self.formats.reject(candidate, mode, err)
            return True
        if mode == TOOLS and err.kind == "context_length" and candidate.tool_transport == "auto":
            # The tool specs (every skill's schema, in the prompt) made it too long for this
            # server; the JSON protocol's schema is a grammar, not prompt text. This request
            # only: a shorter conversation may fit with tools again.
            log.info(
                "runner %s: the prompt with tools is too long; this request uses the JSON protocol",
                candidate.name,
            )
            return True
        return False

    def refusal(self) -> str | None:
        """The sentence a call gets now when every runner has reached a spending cap (None: one may answer)."""
        return refusal(self.spending, self.runners)

    @property
    def vision_runners(self) -> tuple[str, ...]:
        """The names of the runners that take images, in the order a message with images tries them."""
        return vision_order(self.settings.vision_runner, self.runners)

    def _select(self, name: str | None, vision: bool = False) -> list[RunnerConfig]:
        if vision and name is None:
            by_name = {r.name: r for r in self.runners}
            chosen = [by_name[n] for n in self.vision_runners if n in by_name]
            if not chosen:
                raise ValueError("no llm runner takes images (set vision: true on one, or llm.vision_runner)")
            return chosen
        if name is None:
            return list(self.runners)
        chosen = [r for r in self.runners if r.name == name]
        if not chosen:
            known = ", ".join(r.name for r in self.runners)
            raise ValueError(f"unknown llm runner {name!r} (configured: {known})")
        return chosen

    def _complete_on(
        self,
        runner: RunnerConfig,
        body: JsonObject,
        stream: bool,
        on_delta: Callable[[str], None] | None,
        stop: threading.Event | None = None,
    ) -> Completion:
        attempt = 0
        while True:
            try:
                return self._call(runner, body, stream, on_delta, stop)
            except LLMError as err:
                retryable = (
                    err.status is not None
                    and not err.quota
                    and (err.status in (408, 429) or err.status >= 500)
                    and err.kind != "context_length"
                )
                if not retryable or attempt >= self.retries:
                    raise
                delay = err.retry_after
                if delay is None:
                    delay = self.retry_backoff * (2**attempt)
                delay = min(delay, self.retry_max_wait)
                log.info("llm runner %r answered HTTP %s; retrying in %.1f s", runner.name, err.status, delay)
                self._sleep(delay)
                attempt += 1

    def _net(self, runner: RunnerConfig) -> NetSettings:
        return self._env.get(runner.base_url) if self._env is not None else {}

    def _headers(self, runner: RunnerConfig, stream: bool = False) -> dict[str, str]:
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        if runner.api_key:
            headers["Authorization"] = f"Bearer {runner.api_key}"
        return headers

    def _post(
        self, runner: RunnerConfig, url: str, body: JsonObject, stream: bool, deadline: CallDeadline
    ) -> requests.Response:
        """Send the request and take the answer's headers, within the call's deadline; raises LLMError."""
        try:
            data = self._bodies.encode(body)
        except ValueError as exc:  # NaN or infinity: what requests' json= raised
            raise transport_error(runner, requests.exceptions.InvalidJSONError(exc)) from None
        try:
            # Always streamed at the HTTP level: the body is read under the deadline below, also
            # when the answer is one JSON object (requests would read it with a per-read timeout).
            response = self._session.post(
                url,
                data=data,
                headers={**self._headers(runner, stream), "Content-Type": "application/json"},
                timeout=runner.timeout_seconds,
                stream=True,
                allow_redirects=False,  # the conversation goes to base_url only (llm/errors.py: redirect_detail)
                **self._net(runner),
            )
        except requests.RequestException as exc:
            if deadline.expired:
                cut = timeout_error(runner, b"")
                cut.sent = reached_server(exc)  # cut while the server read the prompt or worked on it
                raise cut from None
            raise transport_error(runner, exc) from None
        if deadline.fired:  # cut in the headers: what http.client read up to the cut is no answer
            response.close()
            cut = timeout_error(runner, b"")
            cut.sent = True
            raise cut
        return response

    def _call(
        self,
        runner: RunnerConfig,
        body: JsonObject,
        stream: bool,
        on_delta: Callable[[str], None] | None,
        stop: threading.Event | None = None,
    ) -> Completion:
        url = f"{runner.base_url}/chat/completions"
        started = time.monotonic()
        with (
            self._semaphore,
            CallDeadline(runner.timeout_seconds) as deadline,  # the whole call, not each read
            hang_up_on(stop, deadline.fire),  # a stop cuts the connection as the deadline would
        ):
            response = self._post(runner, url, body, stream, deadline)
            with response:
                if not 200 <= response.status_code < 300:
                    raise http_error(
                        response.status_code,
                        error_text(response, deadline),
                        response.headers,
                        runner=runner.name,
                        base_url=runner.base_url,
                        secret=runner.api_key,
                        unset_key_env=unset_key_variable(runner),
                    )
                is_sse = "text/event-stream" in response.headers.get("Content-Type", "")
                try:
                    if stream and is_sse:
                        raw = read_stream(response, runner, on_delta, deadline)
                    else:
                        raw = read_json(response, runner, deadline)
                except LLMError as err:
                    err.sent = True  # the server took the request and answered 2xx: cut, or broke off
                    raise
        completion = to_completion(raw, runner, time.monotonic() - started)
        if stream and not is_sse and on_delta is not None and completion.text:
            on_delta(completion.text)  # the server ignored `stream`; show the answer once
        return completion

    # ----- status -----------------------------------------------------------------

    def ping(self, runner: str | None = None) -> tuple[bool, str]:
        """GET {base_url}/models on one runner (or all); (ok, one-line status). Never raises."""
        try:
            targets = self._select(runner)
        except ValueError as exc:
            return False, str(exc)
        results = [self._ping_one(r) for r in targets]
        ok = any(r[0] for r in results)
        return ok, " ".join(r[1] for r in results)

    def _ping_one(self, runner: RunnerConfig) -> tuple[bool, str]:
        # No semaphore: /status must answer while a long completion holds the slot.
        where = f"'{runner.name}' ({runner.base_url})"
        seconds = min(5.0, runner.timeout_seconds)
        deadline = Deadline(seconds)
        try:
            with deadline:  # the whole answer, not each read: a trickle must not hold /status
                response = self._session.get(
                    f"{runner.base_url}/models",
                    headers=self._headers(runner),
                    timeout=seconds,
                    allow_redirects=False,  # as a chat call: a server that redirects is not one that answers
                    **self._net(runner),
                )
            if deadline.fired:  # cut while the answer arrived: a short read is no answer
                return False, timeout_error(runner, b"").user_message()
            with response:
                if response.status_code != 200:
                    err = http_error(
                        response.status_code,
                        response.text,
                        response.headers,
                        runner=runner.name,
                        base_url=runner.base_url,
                        secret=runner.api_key,
                        unset_key_env=unset_key_variable(runner),
                    )
                    return False, err.user_message()
            return True, f"The model server {where} is reachable."
        except requests.RequestException as exc:
            if deadline.expired:
                return False, timeout_error(runner, b"").user_message()
            return False, transport_error(runner, exc).user_message()
        except Exception as exc:  # ping must never raise; report the type only
            return False, f"The model server {where} could not be checked: {type(exc).__name__}."

    def close(self) -> None:
        """Close the HTTP session if this client created it."""
        if self._owns_session:
            self._session.close()
