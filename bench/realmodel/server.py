"""The real model server for the benches: start it, read its log, and the `llm` section every part uses."""

from __future__ import annotations

import re
from pathlib import Path

from tests.real_model import RealModelServer

ROOT = Path(__file__).resolve().parent.parent.parent

_PROMPT_EVAL_RE = re.compile(r"prompt eval time\s*=\s*[\d.]+ ms /\s*(\d+) tokens")


class LogReader:
    """Reads what the server wrote to its log since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def new_text(self) -> str:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        return data.decode("utf-8", "replace")

    def evaluated(self) -> list[int]:
        """Prompt tokens evaluated by each request finished since the last call."""
        return [int(n) for n in _PROMPT_EVAL_RE.findall(self.new_text())]


def start_server(folder: Path, chat_format: str = "chatml", n_ctx: int = 4096) -> RealModelServer:
    server = RealModelServer(log_path=folder / "server.log", verbose=True, chat_format=chat_format, n_ctx=n_ctx)
    server.start()
    return server


MAX_TOKENS = [160]


def llm_section(server: RealModelServer, **runner) -> dict:
    return {
        "runners": [server.runner(**runner)],
        "retries_per_runner": 0,
        "temperature": 0,
        "max_tokens": MAX_TOKENS[0],
        "max_skill_rounds": 3,
    }
