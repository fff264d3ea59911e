"""Prompt prefix stability: how much of each request repeats the previous request byte for byte.

A scripted 50-turn conversation runs against the fake model server; the fake calls real
built-in skills on some turns (notes, tasks, time; two calls in a row on some) and answers
directly on others. For every request after the first, the share is the length of the
longest common prefix of its raw HTTP body (the JSON exactly as ``requests`` sent it) and
the previous request's body, divided by its own length. Providers with prompt caching
(llama.cpp slots, vLLM prefix caching, hosted APIs) reuse about that share.

Scenarios: the default history budget (trimming starts late in the run), a budget large
enough that nothing is trimmed, a small budget (trimming every turn), and the default with
a learning written every 10 turns (the system message changes), and memory recall off
(the recall block is fresh text at the end of every turn's message).

    python bench/prefix_stability.py           # 50 turns per scenario
    python bench/prefix_stability.py --quick   # 6 turns, 2 scenarios (smoke test)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from messaging_llm_bot.agent.incoming import AgentMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import FAKE_SERVER_NOTE, bench_config, build_bot, fake_server, machine_line, percentile, table  # noqa: E402

from messaging_llm_bot.protocol.messages import ARGS_REQUEST_LEAD  # noqa: E402

TARGET = 0.95
REPLY_PAD = "Here is what I found, in a sentence or two so the history grows like a real chat does."


def script(turns: int, learnings_every: int = 0) -> list[tuple[str, list[dict]]]:
    """(user text, skill calls the fake model makes before replying) for each turn."""
    out = []
    for i in range(turns):
        kind = i % 10
        calls: list[dict] = []
        if kind == 0:
            text = f"note this down: the plumber comes on day {i}"
            calls = [
                {
                    "skill": "notes",
                    "args": {"action": "add", "title": f"plumber {i}", "body": f"Plumber visit, day {i}."},
                }
            ]
        elif kind == 1:
            text = "what time is it?"
            calls = [{"skill": "time", "args": {"action": "now"}}]
        elif kind == 2:
            text = f"add a task: call mom about trip {i}"
            calls = [{"skill": "tasks", "args": {"action": "add", "title": f"call mom about trip {i}"}}]
        elif kind == 4:
            text = "do I have notes about the plumber?"
            calls = [{"skill": "notes", "args": {"action": "search", "query": "plumber"}}]
        elif kind == 5:
            text = "what is on my list?"
            calls = [{"skill": "tasks", "args": {"action": "list", "status": "open"}}]
        elif kind == 7:
            text = "which weekday is 2026-12-25?"
            calls = [{"skill": "time", "args": {"action": "weekday", "date": "2026-12-25"}}]
        elif kind == 8:
            text = "list my notes and tell me the time"
            calls = [{"skill": "notes", "args": {"action": "list"}}, {"skill": "time", "args": {"action": "now"}}]
        else:
            text = f"thanks! anything else I should know today ({i})?"
        if learnings_every and i % learnings_every == learnings_every - 1:
            text = f"remember that I prefer short answers ({i})"
            calls = [{"skill": "learnings", "args": {"action": "remember", "text": f"prefers short answers ({i})"}}]
        out.append((text, calls))
    return out


def make_handler(turns: list[tuple[str, list[dict]]]):
    """The fake model: find the turn by its user text, then make its calls one round at a time (with
    ``skill_choice: two_step``, the name first and the arguments when asked)."""
    by_text = {text: calls for text, calls in turns}

    def handler(request: dict) -> str:
        messages = request.get("messages") or []
        two_step = '{"skill": "<skill name>"}\n' in str(messages[0].get("content") if messages else "")
        # The turn's first user message is the last one that is not skill feedback.
        rounds_done = 0
        user_text = ""
        for message in reversed(messages):
            content = str(message.get("content") or "")
            if message.get("role") == "assistant" and content.startswith('{"skill"'):
                rounds_done += 1
                continue
            if message.get("role") == "user" and (rounds_done == 0 or not content.startswith("[")):
                candidate = content.split("\n\n", 1)[0]
                if candidate in by_text:
                    user_text = candidate
                    break
        calls = by_text.get(user_text, [])
        if str(messages[-1].get("content") or "").startswith(ARGS_REQUEST_LEAD):
            return json.dumps(calls[rounds_done - 1]["args"])  # the name is the last '{"skill"' answer
        if rounds_done < len(calls):
            return json.dumps({"skill": calls[rounds_done]["skill"]} if two_step else calls[rounds_done])
        return json.dumps({"reply": f"{REPLY_PAD} (answer to: {user_text[:40]})"})

    return handler


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix (binary search on slices: fast for long bodies)."""
    limit = min(len(a), len(b))
    low, high = 0, limit
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def analyse(requests: list) -> dict:
    """Per-request prefix shares and what broke the prefix where it fell below the target."""
    shares, causes = [], {"history trimmed": 0, "system message changed": 0, "new turn": 0}
    reused = total = 0
    prompt_reused = prompt_total = 0  # the messages alone: what a server's prompt cache can reuse
    for previous, current in zip(requests, requests[1:], strict=False):
        body, before = bytes(current.body), bytes(previous.body)
        n = common_prefix(body, before)
        share = n / len(body) if body else 1.0
        shares.append(share)
        reused += n
        total += len(body)
        prompt, prompt_before = (json.dumps(r.get("messages") or []).encode() for r in (current, previous))
        prompt_reused += common_prefix(prompt, prompt_before)
        prompt_total += len(prompt)
        if share < TARGET:
            msgs, old = current.get("messages") or [], previous.get("messages") or []
            if msgs[:1] != old[:1]:
                causes["system message changed"] += 1
            elif len(msgs) > 1 and len(old) > 1 and msgs[1] != old[1] and "[Now] " not in str(old[1].get("content")):
                # old[1] was a stored history message (only the live final user message has [Now]).
                causes["history trimmed"] += 1
            else:
                # The previous turn's [Now]/recall block and skill rounds are not kept in history.
                causes["new turn"] += 1
    return {
        "requests": len(requests),
        "weighted": reused / total if total else 1.0,
        "prompt_weighted": prompt_reused / prompt_total if prompt_total else 1.0,
        "median": percentile(shares, 50),
        "p10": percentile(shares, 10),
        "min": min(shares) if shares else 1.0,
        "below": sum(1 for s in shares if s < TARGET),
        "causes": causes,
        "mean_bytes": total / max(1, len(shares)),
    }


def run_scenario(
    server,
    base: Path,
    name: str,
    turns: int,
    budget: int | None,
    learnings_every: int,
    *,
    memory: bool = True,
    skill_choice: str = "direct",
) -> dict:
    """One scripted conversation on a fresh workspace; returns the analysis."""
    plan = script(turns, learnings_every)
    server.reset()
    server.set_handler(make_handler(plan))
    extra = {"history_budget_chars": budget} if budget is not None else {}
    root = base / name.replace(" ", "_")
    config = bench_config(server.base_url, max_concurrency=1, memory=memory, extra_runtime=extra)
    config["llm"]["runners"][0]["skill_choice"] = skill_choice
    bot = build_bot(config, root)
    try:
        failed = []
        for text, calls in plan:
            result = bot.agent.handle(AgentMessage("owner", text))
            done = [c.skill for c in result.skill_calls if c.ok]
            if not result.ok or len(done) != len(calls):
                failed.append(f"{text!r}: ok={result.ok}, skills run {done}, reply {result.reply[:80]!r}")
        requests = list(server.chat_requests)
    finally:
        bot.close()
        shutil.rmtree(root, ignore_errors=True)
    out = analyse(requests)
    out.update(name=name, failed=failed, skill_turns=sum(1 for _, c in plan if c))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 turns, 2 scenarios (smoke test)")
    parser.add_argument("--turns", type=int, default=None)
    args = parser.parse_args(argv)
    turns = args.turns or (6 if args.quick else 50)
    scenarios = [
        ("default history budget (12000 chars)", None, 0),
        ("no trimming (budget 200000 chars)", 200_000, 0),
        ("small budget (2000 chars)", 2_000, 0),
        ("learning written every 10 turns", None, 10),
        ("default budget, memory recall off", None, 0, False),
        ("default budget, skill_choice two_step", None, 0, True, "two_step"),
    ]
    if args.quick:
        scenarios = [scenarios[0], scenarios[2], scenarios[5]]
    server = fake_server(latency=0.0)
    base = Path(tempfile.mkdtemp(prefix="bench-prefix-"))
    rows = []
    try:
        for name, budget, every, *more in scenarios:
            memory, choice = (more + [True, "direct"][len(more) :])[:2]
            rows.append(run_scenario(server, base, name, turns, budget, every, memory=memory, skill_choice=choice))
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(machine_line())
    print(FAKE_SERVER_NOTE)
    print(
        f"{turns} turns per scenario, {rows[0]['skill_turns']} of them with skill calls; requests compared with the "
        "previous request's raw body"
    )
    print(
        table(
            [
                "scenario",
                "requests",
                "mean body bytes",
                "reused bytes (weighted)",
                "messages reused (weighted)",
                "median",
                "p10",
                "min",
                f"requests < {TARGET:.0%}",
                "of which: history trimmed",
                "system changed",
                "new turn only",
            ],
            [
                [
                    r["name"],
                    r["requests"],
                    f"{r['mean_bytes']:.0f}",
                    f"{r['weighted']:.1%}",
                    f"{r['prompt_weighted']:.1%}",
                    f"{r['median']:.1%}",
                    f"{r['p10']:.1%}",
                    f"{r['min']:.1%}",
                    r["below"],
                    r["causes"]["history trimmed"],
                    r["causes"]["system message changed"],
                    r["causes"]["new turn"],
                ]
                for r in rows
            ],
        )
    )
    for r in rows:
        for failure in r["failed"][:3]:
            print(f"warning ({r['name']}): scripted turn did not run as planned: {failure}")
    print(f"target: >= {TARGET:.0%} reused when learnings, skills and collectors do not change")
    return 0


if __name__ == "__main__":
    sys.exit(main())
