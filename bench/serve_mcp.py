"""``memory_search`` through MCP: the latency an MCP client sees, over stdio, against a 10k-file workspace.

A workspace of 10,000 note and collector files (``_common.write_files``) is indexed once, then
``assistant mcp serve`` is started by the official MCP SDK's client (stdio, as Claude Desktop starts it)
and ``memory_search`` is called 200 times with two Zipf-drawn content words each, one call at a time;
each call's time is from the client's request to its parsed answer (JSON-RPC over the pipe, the tool's
thread hop, the search, the JSON of the hits).

    .venv/bin/python bench/serve_mcp.py                 # 10k files, 200 calls
    .venv/bin/python bench/serve_mcp.py --files 1000 --calls 50
    .venv/bin/python bench/serve_mcp.py --quick         # 500 files, 20 calls (smoke test)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    bench_config,
    machine_line,
    module_command,
    ms,
    percentile,
    query_words,
    table,
    write_config_dir,
    write_files,
)
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from assistant_framework.memory import MemoryService  # noqa: E402
from assistant_framework.workspace import Workspace  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


async def calls(config: Path, workspace: Path, queries: list[str]) -> tuple[list[float], int]:
    executable, *args = module_command(
        "messaging_llm_bot.cli", "mcp", "serve", "--config", str(config), "--workspace", str(workspace)
    )
    params = StdioServerParameters(command=executable, args=args, cwd=str(REPO))
    times: list[float] = []
    with_hits = 0
    async with Client(stdio_client(params), cache=None) as client:
        await client.call_tool("memory_search", {"query": "warm up"})
        for query in queries:
            started = time.perf_counter()
            result = await client.call_tool("memory_search", {"query": query, "limit": 10})
            text = "".join(getattr(part, "text", "") for part in result.content)
            if result.is_error:
                raise RuntimeError(f"memory_search failed: {text}")
            found = json.loads(text)["results"]
            times.append(time.perf_counter() - started)
            with_hits += bool(found)
    return times, with_hits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="500 files, 20 calls (smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.calls = 500, 20
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        base = Path(tmp)
        root = base / "workspace"
        write_files(root, args.files)
        # The per-minute bound (120 by default) would refuse most of 200 back-to-back calls: raised here.
        config = write_config_dir(
            {**bench_config("http://127.0.0.1:9/v1"), "serve": {"per_minute": 10_000}}, base / "config"
        )
        service = MemoryService(Workspace(root), bench_config("http://127.0.0.1:9/v1"), start_worker=False)
        entries = service.reindex()
        service.close()
        queries = [" ".join(query_words(rng)) for _ in range(args.calls)]
        times, with_hits = asyncio.run(calls(config, root, queries))
    print(machine_line())
    print(f"{args.files} files, {entries} index entries; {args.calls} memory_search calls over stdio, one at a time")
    print(
        table(
            ["files", "calls", "p50 ms", "p95 ms", "max ms", "calls with hits"],
            [
                [
                    args.files,
                    args.calls,
                    ms(percentile(times, 50)),
                    ms(percentile(times, 95)),
                    ms(max(times)),
                    f"{100 * with_hits // max(1, len(times))}%",
                ]
            ],
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
