"""Setup's model steps: the server (given, or one of the local servers found, or typed) and its model,
each checked by a probe, and the short test turn against the chosen runner."""

from __future__ import annotations

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.llm.probe import LOCAL_SERVERS, Probe, find_local_servers, probe
from messaging_llm_bot.ops.setup.answers import Answers, Current, base_url_problem, key_hint, runner_key
from messaging_llm_bot.ops.setup.dialog import Dialog, SetupError, Step


class ModelSteps(Step):
    """The runner to write, and the test turn."""

    def __init__(
        self,
        answers: Answers,
        dialog: Dialog,
        current: Current,
        settings: list[tuple[str, object]],
        candidates: tuple[tuple[str, str], ...] = LOCAL_SERVERS,
    ) -> None:
        super().__init__(answers, dialog, current, settings)
        #: Where to look for a local model server (tests point this at their fake).
        self.candidates = candidates

    def server(self) -> JsonObject:
        """The runner to write: the server and model given or chosen (at a terminal asked again until
        the server answers and lists the model), the other keys of the configured runner kept."""
        current = self.current.runner
        asked = self.a.base_url is None
        api_key = self.a.api_key
        while True:
            if asked:
                base_url, typed_key = self._choose_server(current)
                api_key = self.a.api_key or typed_key
            else:
                base_url = str(self.a.base_url)
            problem = base_url_problem(base_url)
            if problem is not None:
                if not (asked and self.a.interactive):
                    raise SetupError(f"Model: {problem}")
                self.io.say(f"Model: {problem}; try again.")
                continue
            same_server = current is not None and current.get("base_url") == base_url
            key = api_key if api_key is not None else (runner_key(current) if same_server else "")
            base_url, result = self._probe(base_url, key)
            if not result.reachable:
                error = f"Model: {result.error}{key_hint(result, current if same_server else None)}"
                if not (asked and self.a.interactive):
                    raise SetupError(error)
                self.io.say(error)
                if result.status in (401, 403):
                    api_key = self.io.secret("API key for this server: ").strip()
                continue
            model = self._model(result, current if same_server else None)
            if model is None:
                continue  # at a terminal: the server again
            self.io.say(f"Model: {model} at {base_url}.")
            runner = dict(current) if current else {"name": "local"}
            if not same_server:  # a key is for the server it was given for: never sent to another one
                runner.pop("api_key", None)
                runner.pop("api_key_env", None)
            runner.update(base_url=base_url, model=model)
            if api_key:
                runner["api_key"] = api_key
            self.settings.append(("llm.runners", [runner, *self.current.runners[1:]]))
            return runner

    def _probe(self, base_url: str, key: str) -> tuple[str, Probe]:
        """The server's answer at ``base_url``, or at ``base_url`` + ``/v1`` when only that one lists models
        (the usual slip: the server's address without the /v1 of its OpenAI-compatible API)."""
        result = probe(base_url, key)
        if result.reachable and result.models is None and not base_url.rstrip("/").endswith("/v1"):
            with_v1 = base_url.rstrip("/") + "/v1"
            at_v1 = probe(with_v1, key)
            if at_v1.reachable and at_v1.models is not None:
                self.io.say(f"Model: {base_url} lists no models, {with_v1} does; using {with_v1}.")
                return with_v1, at_v1
        return base_url, result

    def _choose_server(self, current: JsonObject | None) -> tuple[str, str | None]:
        """(base URL, API key typed or None): the configured server without a terminal, else one of the
        local servers found or one typed."""
        if current is not None and not self.a.interactive:
            return str(current.get("base_url") or ""), None
        self.io.say("Model: looking for local servers (" + ", ".join(f"{n} {u}" for n, u in self.candidates) + ")...")
        found = find_local_servers(candidates=self.candidates)
        for index, (name, result) in enumerate(found, 1):
            models = ", ".join((result.models or [])[:8]) or "models not listed"
            self.io.say(f"  {index}. {name} at {result.base_url}: {models}")
        configured = str(current.get("base_url") or "") if current else ""
        if not found:
            self.io.say("  none answered.")
            if not self.a.interactive:
                raise SetupError(
                    "Model: no local model server found; start one (e.g. `ollama serve`) or pass --base-url and --model"
                )
            base_url = self._ask("OpenAI-compatible base URL (ending in /v1)", configured)
            if base_url == configured and configured:
                return base_url, None
            return base_url, self.io.secret("API key (empty: none): ").strip()
        urls = [result.base_url for _, result in found]
        default = str(urls.index(configured) + 1) if configured in urls else (configured or "1")
        choice = self._ask("Use which server (number, or a base URL)", default)
        if choice.isdigit() and 1 <= int(choice) <= len(found):
            return urls[int(choice) - 1], None
        return choice, None

    def _model(self, result: Probe, current: JsonObject | None) -> str | None:
        """The model: ``--model``, or chosen from the server's list (shown first); None at a terminal when
        the server should be chosen again."""
        configured = str(current.get("model") or "") if current else ""
        while True:
            model = self.a.model or self._choose_model(result, configured)
            problem = result.model_problem(model)
            if problem is None:
                return model
            if self.a.model is not None or not self.a.interactive:
                raise SetupError(f"Model: {problem}")
            self.io.say(f"Model: {problem}; try again.")

    def _choose_model(self, result: Probe, configured: str) -> str:
        models = result.models or []
        if not models:
            if not self.a.interactive and not configured:
                raise SetupError("Model: the server lists no models; pass --model NAME")
            return self._ask_until("Model name", configured, lambda m: None if m else "a model name is needed")
        for index, name in enumerate(models, 1):
            self.io.say(f"  {index}. {name}")
        default = str(models.index(configured) + 1) if configured in models else "1"
        choice = self._ask("Use which model (number or name)", default)
        if choice.isdigit() and 1 <= int(choice) <= len(models):
            return models[int(choice) - 1]
        return choice

    def test_turn(self, runner: JsonObject) -> bool:
        """One short completion against the chosen runner; prints the answer and the time it took."""
        from messaging_llm_bot.llm.client import LLMClient
        from messaging_llm_bot.llm.errors import LLMError

        tried = {**runner, "api_key": runner_key(runner)}
        tried.pop("api_key_env", None)
        client = LLMClient.from_section({"runners": [tried], "retries_per_runner": 0, "stream": False})
        try:
            done = client.complete([{"role": "user", "content": "Say hello in five words."}], extra={"max_tokens": 40})
        except LLMError as err:
            self.io.say(f"Test turn: FAILED: {err.user_message()}")
            return False
        finally:
            client.close()
        self.io.say(f"Test turn: {done.text.strip()[:200]!r} ({done.elapsed_s:.1f} s)")
        return True
