"""The doctor's model checks: each runner answers and lists its model, a one-token completion, the
structured-output forms it accepts, and whether a vision runner sees a picture."""

from __future__ import annotations

import logging

from assistant_framework.hints import CLI
from assistant_framework.json_types import JsonObject
from messaging_llm_bot.llm.probe import probe
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, WARN, Check, Context


def _runner_key(runner: JsonObject) -> str:
    from messaging_llm_bot.ops.setup.answers import runner_key  # one reading of a runner's key

    return runner_key(runner)


def check_runners(ctx: Context) -> list[Check]:
    llm = (ctx.config or {}).get("llm") or {}
    runners = llm.get("runners") or []
    if not runners:
        return [Check("model", FAIL, "no runner in llm.runners", f"`{CLI} setup` finds a local model server")]
    checks = []
    for index, runner in enumerate(runners):
        name = f"model {runner.get('name', '?')}"
        result = probe(str(runner.get("base_url", "")), _runner_key(runner), timeout=5)
        problem = result.model_problem(str(runner.get("model", "")))
        key = f"llm.runners[{index}]"
        if problem:
            env_name = str(runner.get("api_key_env") or "")
            if result.status in (401, 403) and env_name and not _runner_key(runner):
                problem += f"; no key was sent: the variable {env_name} (its api_key_env) is not set"
                fix = f"set {env_name} in the environment the bot runs in (or `{key}.api_key`)"
            elif result.status in (401, 403):
                fix = f"fix the API key: `{CLI} config set {key}.api_key KEY` (or {key}.api_key_env)"
            elif not result.reachable:
                fix = f"start the server, or fix {key}.base_url"
            else:
                fix = f"pull the model or pick one it offers: `{CLI} config set {key}.model NAME`"
            checks.append(Check(name, FAIL, problem, fix))
            continue
        listed = "listed" if result.models is not None else "not checked (no /models list)"
        detail = f"{runner.get('base_url')} reachable, model {runner.get('model')!r} {listed}"
        if not ctx.quick:
            answered, report = _completion_report(runner)
            detail += "; " + report
            if not answered:
                base = str(runner.get("base_url", "")).rstrip("/")
                hint = (
                    f" (OpenAI-compatible servers answer under /v1: try {base}/v1)"
                    if result.models is None and not base.endswith("/v1")
                    else ""
                )
                checks.append(Check(name, FAIL, detail, f"check {key}.base_url{hint} and {key}.model"))
                continue
        checks.append(Check(name, OK, detail))
        if not ctx.quick and runner.get("name") in _vision_names(llm):
            checks.append(_vision_check(runner, key))
    return checks


def _vision_names(llm: JsonObject) -> tuple[str, ...]:
    """The runners a message with images goes to (``llm.vision_runner``, ``vision: true``)."""
    from messaging_llm_bot.llm.runners import runners_from_config, vision_order

    try:
        return vision_order(str(llm.get("vision_runner") or ""), runners_from_config(llm))
    except ValueError:
        return ()


def _vision_check(runner: JsonObject, key: str) -> Check:
    """Send a small red picture and ask its colour: does the runner take images, and does it see them?"""
    import io

    from PIL import Image

    from assistant_framework.media.images import PreparedImage, prepare_image
    from messaging_llm_bot.agent.images import ImageInput, user_content
    from messaging_llm_bot.llm.client import LLMClient
    from messaging_llm_bot.llm.errors import LLMError

    name = f"vision {runner.get('name', '?')}"
    picture = io.BytesIO()
    Image.new("RGB", (64, 64), (220, 20, 20)).save(picture, "PNG")
    prepared = prepare_image(picture.getvalue(), 64)
    assert isinstance(prepared, PreparedImage)
    question = "What colour is this picture? Answer with one word."
    content = user_content(question, (ImageInput("doctor-probe.png", prepared),))
    client = LLMClient.from_section({"runners": [runner], "retries_per_runner": 0, "stream": False})
    client_log = logging.getLogger("messaging_llm_bot.llm.client")
    level = client_log.level
    client_log.setLevel(logging.ERROR)  # the check's line reports a failure; the client's would say it twice
    try:
        done = client.complete([{"role": "user", "content": content}], extra={"max_tokens": 10})
    except LLMError as err:
        return Check(
            name,
            FAIL,
            f"a picture was refused: {err.user_message()}",
            f"use a model that takes images on this runner, or remove {key}.vision (and llm.vision_runner)",
        )
    finally:
        client_log.setLevel(level)
        client.close()
    answer = " ".join(done.text.split())[:60]
    if "red" not in answer.lower():
        return Check(
            name,
            WARN,
            f"a red picture was answered with {answer!r} in {done.elapsed_s:.2f} s: the model may not see images",
            f"check that the server loaded the model's vision part (llama.cpp: --mmproj), or remove {key}.vision",
        )
    return Check(name, OK, f"a red picture was seen as {answer!r} in {done.elapsed_s:.2f} s")


def _completion_report(runner: JsonObject) -> tuple[bool, str]:
    """Whether a one-token completion worked, and a report: its time and the structured-output forms accepted."""
    from messaging_llm_bot.llm.client import LLMClient
    from messaging_llm_bot.llm.errors import LLMError

    client = LLMClient.from_section({"runners": [runner], "retries_per_runner": 0, "stream": False})
    messages = [{"role": "user", "content": "Reply with OK."}]
    # The check's own line reports a failure, with its fix: the client's log line would say it twice.
    client_log = logging.getLogger("messaging_llm_bot.llm.client")
    level = client_log.level
    client_log.setLevel(logging.ERROR)
    try:
        try:
            done = client.complete(messages, extra={"max_tokens": 1})
        except LLMError as err:
            return False, f"a one-token completion failed: {err.user_message()}"
        accepted = []
        schema = {
            "type": "json_schema",
            "json_schema": {"name": "probe", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
        }
        for label, form in (("json_schema", schema), ("json_object", {"type": "json_object"})):
            try:
                client.complete(messages, extra={"max_tokens": 4, "response_format": form})
                accepted.append(label)
            except LLMError:
                pass
        forms = ", ".join(accepted) or "none (the JSON skill protocol needs none)"
        return True, f"1-token completion in {done.elapsed_s:.2f} s; structured output accepted: {forms}"
    finally:
        client_log.setLevel(level)
        client.close()
